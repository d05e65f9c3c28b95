"""Whether an allocated device is of a device kind (conformance.scenario_api.kind_check, and
`assert_of_kind` of the workloads): a kind the harness cannot judge is its error, never a
pass."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.kube.state import AllocationResult
from conformance.model.devices import PublishedDevice
from conformance.model.frozen import FrozenMap
from conformance.model.outcome import HarnessError
from conformance.scenario_api.claims import ClaimOps
from conformance.scenario_api.kind_check import is_of_kind

D = "gpu.example.com"
SIMPLE = f'device.attributes["{D}"].model == "m"'
BEYOND = f'device.attributes["{D}"].model in ["m", "n"]'  # no `==` conjunction


def gpu(name: str = "gpu-0", model: str = "m") -> PublishedDevice:
    return PublishedDevice("w1", name, "w1", FrozenMap({f"{D}/model": model}))


def test_the_selector_decides_when_the_harness_can_evaluate_it() -> None:
    assert is_of_kind("k", SIMPLE, gpu(), D, None) is True
    assert is_of_kind("k", SIMPLE, gpu(model="x"), D, None) is False
    assert is_of_kind("k", None, gpu(), D, None) is True


def test_beyond_the_evaluator_the_runs_device_set_decides() -> None:
    assert is_of_kind("k", BEYOND, gpu(), D, frozenset({"w1/gpu-0"})) is True


def test_an_unknown_device_set_is_the_harness_error_naming_why() -> None:
    with pytest.raises(HarnessError, match=r"cannot check which kind device w1/gpu-0 is .*: its"):
        is_of_kind("k", BEYOND, gpu(), D, None)
    with pytest.raises(HarnessError, match="was not published when the run computed"):
        is_of_kind("k", BEYOND, gpu(), D, frozenset({"w1/gpu-1"}))


def _workloads(expression: str, known: frozenset[str] | None) -> SimpleNamespace:
    """What `ClaimOps.assert_of_kind` reads of its workloads: profile, run context, slices."""
    profile = SimpleNamespace(driver=D, kind_class_and_expression=lambda kind: (D, expression))
    return SimpleNamespace(
        profile=profile,
        context=SimpleNamespace(device_sets={"k": known}),
        live_devices=lambda: {"w1/gpu-0": gpu()},
    )


def test_assert_of_kind_with_an_unknown_device_set_is_an_error_not_a_pass() -> None:
    result = AllocationResult("dev", D, "w1", "gpu-0")
    with pytest.raises(HarnessError, match="cannot check which kind"):
        ClaimOps.assert_of_kind(_workloads(BEYOND, None), "k", [result])  # type: ignore[arg-type]
    ClaimOps.assert_of_kind(_workloads(SIMPLE, None), "k", [result])  # type: ignore[arg-type]
    other_model = _workloads(SIMPLE.replace('"m"', '"x"'), None)
    with pytest.raises(AssertionError, match="is not of kind 'k'"):
        ClaimOps.assert_of_kind(other_model, "k", [result])  # type: ignore[arg-type]
