"""Pods that must stay undisturbed, device snapshots and node picking: pure functions (cordon,
drain and node restore against the test API server are in tests/apiserver/kube/test_drain.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.kube.slices import DeviceSnapshot
from conformance.model.devices import PublishedDevice
from conformance.model.profile_parse import load_profile
from conformance.run.context import ClusterInfo, RunContext
from conformance.scenario_api.disruption import PodBaseline, disturbances
from conformance.scenario_api.placement import PlacementError, pick_node, whole_node_candidates

ROOT = Path(__file__).resolve().parents[3]


def _pod_state(
    uid: str = "u1", restarts: int = 0, ready: bool = True, cid: str = "c1", **extra: Any
) -> dict:
    return {
        "metadata": {"namespace": "t1", "name": "p", "uid": uid, **extra.pop("meta", {})},
        "spec": {"nodeName": "w1"},
        "status": {
            "phase": extra.pop("phase", "Running"),
            "containerStatuses": [
                {"name": "main", "restartCount": restarts, "ready": ready, "containerID": cid}
            ],
            "conditions": extra.pop("conditions", []),
        },
    }


def test_disturbances_name_every_way_a_pod_can_be_disturbed() -> None:
    baseline = PodBaseline.of(_pod_state())
    assert disturbances(baseline, _pod_state()) == []
    assert disturbances(baseline, None) == ["pod t1/p is gone"]
    assert "replaced" in disturbances(baseline, _pod_state(uid="u2"))[0]
    assert "restarted (restartCount 0 -> 1)" in disturbances(baseline, _pod_state(restarts=1))[0]
    assert disturbances(baseline, _pod_state(cid="c2")) == [
        "pod t1/p container main was replaced (containerID c1 -> c2)"
    ]
    marked = _pod_state(
        conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "X", "message": "m"}],
        meta={"deletionTimestamp": "2026-12-01T00:00:00Z"},
    )
    problems = disturbances(baseline, marked)
    assert any("being deleted" in p for p in problems)
    assert any("DisruptionTarget=True (reason X: m)" in p for p in problems)


def _device(name: str, node_name: str | None = "w1", **attrs: Any) -> PublishedDevice:
    return PublishedDevice("w1", name, node_name, attributes=attrs, capacity={"d/mem": "8Gi"})


def test_device_snapshot_differences() -> None:
    before = DeviceSnapshot.of([_device("a", model="x"), _device("b")])
    assert before.differences(DeviceSnapshot.of([_device("b"), _device("a", model="x")])) == []
    after = DeviceSnapshot.of([_device("a", model="y"), _device("c")])
    assert set(before.differences(after)) == {
        "w1/b: no longer published",
        "w1/c: newly published",
        "w1/a: attributes changed: [('model', 'x'), ('model', 'y')]",
    }


def _context(devices: list[PublishedDevice], nodes_: tuple[str, ...]) -> RunContext:
    return RunContext(
        run_id="r",
        run_dir=Path("/nonexistent"),
        profile=load_profile(ROOT / "drivers" / "fake" / "profile.yaml"),
        cluster=ClusterInfo("kind", "c", "/k", None, True),
        git_version="v1.37.2",
        served_resources={},
        feature_gates=None,
        feature_gates_error=None,
        nodes=nodes_,
        devices=tuple(devices),
        device_sets={"default": frozenset(d.id for d in devices)},
        workload_image="w",
    )


def test_pick_node_prefers_the_smallest_node_that_leaves_room_elsewhere() -> None:
    devices = [
        PublishedDevice("w1", "a", "w1"),
        PublishedDevice("w1", "b", "w1"),
        PublishedDevice("w2", "c", "w2"),
        PublishedDevice("net", "d", None),  # network-attached: belongs to no node
    ]
    context = _context(devices, ("w1", "w2"))
    assert pick_node(context) == "w2"
    assert pick_node(context, at_least=2) == "w1"
    assert pick_node(context, others_at_least=2) == "w2"
    assert pick_node(context, exclude=["w2"]) == "w1"
    with pytest.raises(PlacementError, match="devices per node: w1=2, w2=1"):
        pick_node(context, at_least=2, others_at_least=2)


def test_whole_node_candidates_are_the_nodes_with_enough_devices_fewest_first() -> None:
    devices = [
        PublishedDevice("w1", "a", "w1"),
        PublishedDevice("w1", "b", "w1"),
        PublishedDevice("w2", "c", "w2"),
        PublishedDevice("net", "d", None),
    ]
    context = _context(devices, ("w1", "w2", "w3"))
    assert whole_node_candidates(context, "default", 1) == ["w2", "w1"]
    assert whole_node_candidates(context, "default", 2) == ["w1"]
    assert whole_node_candidates(context, "default", 3) == []
