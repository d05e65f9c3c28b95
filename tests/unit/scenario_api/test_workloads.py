"""The pure parts of conformance/scenario_api/workloads.py: requests per device kind, describing one
published device in CEL, and comparing what a container sees with what it was allocated."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.cel.selection import matching_devices
from conformance.kube.state import AllocationResult
from conformance.model.devices import PublishedDevice
from conformance.model.frozen import FrozenMap
from conformance.model.profile_parse import load_profile
from conformance.scenario_api.container_view import ContainerView
from conformance.scenario_api.workloads import (
    View,
    describing_selector,
    kind_request,
    look_alikes,
    node_selector_for,
    pod_ready,
    restart_count,
    selector_verdict,
)

FAKE_PROFILE = Path(__file__).resolve().parents[3] / "drivers" / "fake" / "profile.yaml"
D = "gpu.example.com"


def device(name: str, node: str = "w1", **attrs: object) -> PublishedDevice:
    return PublishedDevice(node, name, node, FrozenMap({f"{D}/{k}": v for k, v in attrs.items()}))


def test_kind_request_uses_the_kinds_class_and_selector() -> None:
    profile = load_profile(FAKE_PROFILE)
    sel = profile.selectors["large"]
    body = kind_request(profile, "large", "gpu", count=2, selectors=["true"])
    assert body == {
        "name": "gpu",
        "exactly": {
            "deviceClassName": sel.device_class,
            "selectors": [{"cel": {"expression": sel.expression}}, {"cel": {"expression": "true"}}],
            "allocationMode": "ExactCount",
            "count": 2,
        },
    }
    assert kind_request(profile) == {
        "name": "dev",
        "exactly": {"deviceClassName": profile.default_class},
    }


def test_kind_request_rejects_an_unknown_kind() -> None:
    with pytest.raises(KeyError, match="unknown device kind"):
        kind_request(load_profile(FAKE_PROFILE), "nope")


def test_describing_selector_is_an_equality_conjunction_of_all_attributes() -> None:
    gpu = device("gpu-0", model='x"1', index=3, virtual=False)
    expression = describing_selector(gpu)
    assert expression == (
        f'device.attributes["{D}"].index == 3 && '
        f'device.attributes["{D}"].model == "x\\"1" && '
        f'device.attributes["{D}"].virtual == false'
    )
    other = device("gpu-1", model='x"1', index=4)
    assert matching_devices([expression or ""], [gpu, other], D) == {gpu.id}


def test_describing_selector_of_a_device_without_attributes() -> None:
    assert describing_selector(PublishedDevice("w1", "bare", "w1")) is None


def test_look_alikes_are_same_node_devices_the_description_also_matches() -> None:
    gpu = device("gpu-0", model="m")
    others = [
        gpu,
        device("gpu-1", model="m"),  # identical description, same node
        device("gpu-2", model="m", extra=1),  # superset of attributes: matched too
        device("gpu-3", model="n"),
        device("gpu-4", node="w2", model="m"),  # other node: the pod's node selector excludes it
    ]
    assert look_alikes(gpu, others) == ["w1/gpu-1", "w1/gpu-2"]
    assert look_alikes(device("gpu-9", model="m", uuid="u9"), others) == []


def test_view_names_missing_and_foreign_devices() -> None:
    view = View(frozenset({"a", "b"}), frozenset({"b", "c"}))
    assert not view.exact
    assert view.missing == {"a"} and view.foreign == {"c"}
    text = view.explain("container main")
    assert "missing: ['a']" in text and "not allocated to it: ['c']" in text
    assert View(frozenset({"a"}), frozenset({"a"})).exact


def test_node_selector_prefers_the_hostname_label() -> None:
    labelled = {"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "host-1"}}}
    assert node_selector_for(labelled) == {"kubernetes.io/hostname": "host-1"}
    assert node_selector_for({"metadata": {"name": "n1"}}) == {"kubernetes.io/hostname": "n1"}


def test_pod_ready_needs_running_and_every_container_ready() -> None:
    def pod(phase: str, *ready: bool) -> dict:
        statuses = [{"name": f"c{i}", "ready": r, "restartCount": i} for i, r in enumerate(ready)]
        return {"status": {"phase": phase, "containerStatuses": statuses}}

    assert pod_ready(pod("Running", True, True))
    assert not pod_ready(pod("Running", True, False))
    assert not pod_ready(pod("Running"))
    assert not pod_ready(pod("Pending", True))
    assert not pod_ready(None)
    assert restart_count(pod("Running", True, True), "c1") == 1
    assert restart_count(pod("Running", True), "nope") == 0


def test_selector_verdict_is_the_schedulers() -> None:
    gpu = device("gpu-0", model="m")
    assert selector_verdict(None, gpu, D) is True
    assert selector_verdict(f'device.attributes["{D}"].model == "m"', gpu, D) is True
    assert selector_verdict(f'device.attributes["{D}"].model == "n"', gpu, D) is False
    assert selector_verdict(f'device.attributes["{D}"].model in ["m"]', gpu, D) is True
    assert selector_verdict(f'device.attributes["{D}"].model.endsWith("n")', gpu, D) is False
    assert selector_verdict(f'device.attributes["{D}"].index == 0', gpu, D) is False  # no index


def _container_seeing(seen: set[str]) -> SimpleNamespace:
    """What `ContainerView.assert_sees_within` reads: identifiers expected and seen."""
    return SimpleNamespace(
        expected=lambda results: frozenset(r.device_id for r in results),
        seen=lambda pod, container: frozenset(seen),
        ref=lambda pod: f"ns/{pod}",
    )


def test_a_pod_scoped_container_may_see_its_pods_other_devices_but_none_else() -> None:
    first, second = AllocationResult("dev", D, "w1", "a"), AllocationResult("dev", D, "w1", "b")
    check = ContainerView.assert_sees_within
    check(_container_seeing({"w1/a", "w1/b"}), "pod", [second], [first, second], "c")  # type: ignore[arg-type]
    check(_container_seeing({"w1/b"}), "pod", [second], [first, second], "c")  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match=r"should see \['w1/b'\] .* but sees \['w1/a'\]"):
        check(_container_seeing({"w1/a"}), "pod", [second], [first, second], "c")  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="no device outside its pod's claims"):
        check(_container_seeing({"w1/b", "w1/z"}), "pod", [second], [first, second], "c")  # type: ignore[arg-type]
