"""Whether an allocated device is of a device kind (conformance.scenario_api.kind_check, and
`assert_of_kind` of the workloads): the kind's selector decides, evaluated as the scheduler
evaluates it (the real selector helper)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.kube.state import AllocationResult
from conformance.model.devices import PublishedDevice
from conformance.model.frozen import FrozenMap
from conformance.scenario_api.claims import ClaimOps
from conformance.scenario_api.kind_check import (
    allocated_against,
    allocated_device,
    is_of_kind,
    kind_problem,
    node_device_ids,
)

D = "gpu.example.com"
SIMPLE = f'device.attributes["{D}"].model == "m"'
RICH = (
    f'device.attributes["{D}"].model in ["m", "n"] && '
    f'device.capacity["{D}"].memory.compareTo(quantity("8Gi")) >= 0 && '
    f'device.attributes["{D}"].firmware.isGreaterThan(semver("1.0.0"))'
)


def gpu(name: str = "gpu-0", model: str = "m", memory: str = "16Gi") -> PublishedDevice:
    return PublishedDevice(
        "w1",
        name,
        "w1",
        FrozenMap({f"{D}/model": model, f"{D}/firmware": "1.2.0"}),
        version_attributes=frozenset({f"{D}/firmware"}),
        capacity=FrozenMap({f"{D}/memory": memory}),
    )


@pytest.mark.usefixtures("cel")
def test_the_selector_decides() -> None:
    assert is_of_kind("k", SIMPLE, gpu(), D) is True
    assert is_of_kind("k", SIMPLE, gpu(model="x"), D) is False
    assert is_of_kind("k", None, gpu(), D) is True


@pytest.mark.usefixtures("cel")
def test_any_selector_the_scheduler_reads_is_decided_exactly() -> None:
    assert is_of_kind("k", RICH, gpu(), D) is True
    assert is_of_kind("k", RICH, gpu(model="n"), D) is True
    assert is_of_kind("k", RICH, gpu(memory="4Gi"), D) is False
    assert is_of_kind("k", RICH, gpu(model="x"), D) is False


@pytest.mark.usefixtures("cel")
def test_an_evaluation_error_is_not_of_the_kind_and_says_why() -> None:
    problem = kind_problem("k", f'device.attributes["{D}"].cores > 2', gpu(), D)
    assert problem is not None
    assert "not of kind 'k'" in problem and "no such key: cores" in problem


def _workloads(expression: str) -> SimpleNamespace:
    """What `ClaimOps.assert_of_kind` reads of its workloads: profile and slices."""
    profile = SimpleNamespace(driver=D, kind_class_and_expression=lambda kind: (D, expression))
    return SimpleNamespace(profile=profile, devices_allocated_against=lambda: {"w1/gpu-0": gpu()})


@pytest.mark.usefixtures("cel")
def test_assert_of_kind() -> None:
    result = AllocationResult("dev", D, "w1", "gpu-0")
    ClaimOps.assert_of_kind(_workloads(RICH), "k", [result])  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="is not of kind 'k'"):
        ClaimOps.assert_of_kind(_workloads(SIMPLE.replace('"m"', '"x"')), "k", [result])  # type: ignore[arg-type]


def test_a_device_withdrawn_while_allocated_is_checked_as_published_at_the_start() -> None:
    at_start = [gpu("gpu-0", model="old"), gpu("gpu-1")]
    live = {"w1/gpu-1": gpu("gpu-1", model="n")}  # gpu-0 left the slice, gpu-1 changed
    devices = allocated_against(live, at_start)
    assert allocated_device("w1/gpu-0", devices, D).attributes[f"{D}/model"] == "old"
    assert allocated_device("w1/gpu-1", devices, D).attributes[f"{D}/model"] == "n"
    # Given the allocated ids, a device withdrawn but not allocated is not counted.
    assert sorted(allocated_against(live, at_start, {"w1/gpu-1"})) == ["w1/gpu-1"]
    assert sorted(allocated_against(live, at_start, {"w1/gpu-0"})) == ["w1/gpu-0", "w1/gpu-1"]


def test_a_device_published_neither_now_nor_at_the_start_fails_with_a_sentence() -> None:
    devices = allocated_against({"w1/gpu-1": gpu("gpu-1")}, [])
    with pytest.raises(AssertionError) as err:
        allocated_device("w1/gpu-9", devices, D)
    assert str(err.value).startswith(
        f"allocated device w1/gpu-9 of driver {D} is in no ResourceSlice, neither now nor at "
        "the run's start, so its attributes cannot be checked (pool w1 publishes ['w1/gpu-1'])"
    ), str(err.value)
    with pytest.raises(AssertionError, match="pool w2 publishes nothing"):
        allocated_device("w2/gpu-0", devices, D)


def test_a_nodes_devices_include_those_withdrawn_since_the_start() -> None:
    other = PublishedDevice("w2", "gpu-0", "w2")
    at_start = [gpu("gpu-0"), gpu("gpu-1"), other]
    live = {"w1/gpu-1": gpu("gpu-1")}  # gpu-0 is in a pod, and the driver withdrew it
    assert node_device_ids(live, at_start, "w1") == {"w1/gpu-0", "w1/gpu-1"}
    assert node_device_ids(live, at_start, "w2") == {"w2/gpu-0"}
    assert node_device_ids({}, [], "w1") == frozenset()
