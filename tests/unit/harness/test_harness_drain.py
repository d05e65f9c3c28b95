"""Cordon/drain/uncordon, node restore, "undisturbed" pods, device snapshots and node picking,
against the in-memory API server (drain, nodes) or as pure functions."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness_fakeapi import FakeAPI, node

from conformance.kube import drain, nodes
from conformance.kube.client import K8sClients
from conformance.kube.slices import DeviceSnapshot
from conformance.model.devices import PublishedDevice
from conformance.model.naming import CORDONED_BY_LABEL
from conformance.model.profile_parse import load_profile
from conformance.run.context import ClusterInfo, RunContext
from conformance.scenario_api.disruption import PodBaseline, disturbances
from conformance.scenario_api.placement import PlacementError, pick_node

ROOT = Path(__file__).resolve().parents[3]
EVICTION = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)/eviction$")


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    server = FakeAPI()
    server.add("nodes", node("w1"))
    yield server
    server.close()


@pytest.fixture
def k8s(api: FakeAPI) -> K8sClients:
    return api.clients()


def pod(name: str, ns: str = "t1", node_name: str = "w1", owner: str | None = None) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner, "name": "o", "uid": "o1", "controller": True}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node_name, "containers": [{"name": "main", "image": "w"}]},
        "status": {"phase": "Running"},
    }


class Evictions:
    """Eviction subresource: refuse `budget_refusals` times per pod, then delete the pod."""

    def __init__(self, api: FakeAPI, refusals: dict[str, int] | None = None) -> None:
        self.api = api
        self.refusals = dict(refusals or {})
        self.calls: list[str] = []

    def __call__(self, method: str, path: str, query: Any, body: Any) -> tuple[int, Any] | None:
        m = EVICTION.match(path)
        if not m or method != "POST":
            return None
        self.calls.append(m["name"])
        if self.refusals.get(m["name"], 0) > 0:
            self.refusals[m["name"]] -= 1
            return FakeAPI._status(429, "TooManyRequests", "Cannot evict pod as it would violate")
        assert body["deleteOptions"]["preconditions"]["uid"] == f"uid-{m['name']}"
        del self.api.objects[("v1", "pods", m["ns"], m["name"])]
        return 201, {"kind": "Status", "apiVersion": "v1", "status": "Success"}


def test_cordon_labels_for_the_sweep_and_uncordon_undoes_it(api: FakeAPI, k8s) -> None:
    with drain.cordoned(k8s, "w1", "run-1") as ours:
        assert ours
        meta_spec = api.get("nodes", "w1")
        assert meta_spec["spec"]["unschedulable"] is True
        assert meta_spec["metadata"]["labels"][CORDONED_BY_LABEL] == "run-1"
    after = api.get("nodes", "w1")
    assert after["spec"]["unschedulable"] is False
    assert CORDONED_BY_LABEL not in after["metadata"]["labels"]


def test_cordoned_uncordons_on_failure_but_leaves_an_admins_cordon(api: FakeAPI, k8s) -> None:
    with pytest.raises(KeyboardInterrupt), drain.cordoned(k8s, "w1", "run-1"):
        raise KeyboardInterrupt
    assert api.get("nodes", "w1")["spec"]["unschedulable"] is False
    api.get("nodes", "w1")["spec"]["unschedulable"] = True  # cordoned by someone else
    with drain.cordoned(k8s, "w1", "run-1") as ours:
        assert not ours
    assert api.get("nodes", "w1")["spec"]["unschedulable"] is True
    assert CORDONED_BY_LABEL not in api.get("nodes", "w1")["metadata"]["labels"]


def test_drain_retries_refused_evictions_and_leaves_daemonset_pods(api: FakeAPI, k8s) -> None:
    for p in (
        pod("a"),
        pod("b"),
        pod("plugin", ns="driver", owner="DaemonSet"),
        pod("elsewhere", node_name="w2"),
        pod("other-test", ns="t2"),
    ):
        api.add("pods", p)
    evictions = Evictions(api, refusals={"b": 2})
    api.handlers.append(evictions)
    seen: list[int] = []
    result = drain.drain(
        k8s,
        "w1",
        run_id="run-1",
        timeout=10,
        namespaces=["t1"],
        on_progress=lambda r: seen.append(len(r.attempts)),
        retry_interval=0.01,
    )
    assert evictions.calls == ["a", "b", "b", "b"]
    assert [p.name for p in result.evicted] == ["a", "b"]
    assert [a.status for a in result.refusals()] == [429, 429]
    assert result.evicted_at(result.evicted[1]) >= result.refusals()[-1].at
    assert [p.name for p in result.left] == ["plugin"]
    assert set(result.gone_at) == set(result.evicted)
    assert api.get("pods", "other-test", "t2") is not None  # not this test's namespace
    assert api.get("nodes", "w1")["spec"]["unschedulable"] is True  # the caller uncordons
    assert seen == [2, 3, 4]


def test_drain_names_what_is_stuck(api: FakeAPI, k8s) -> None:
    api.add("pods", pod("stuck"))
    api.handlers.append(Evictions(api, refusals={"stuck": 10**6}))
    with pytest.raises(drain.DrainError, match=r"t1/stuck .*would violate"):
        drain.drain(k8s, "w1", run_id="r", timeout=0.05, retry_interval=0.01)


def test_node_snapshot_and_restore_of_what_the_kubelet_does_not_set(api: FakeAPI, k8s) -> None:
    api.add(
        "nodes",
        {
            "metadata": {"name": "w2", "uid": "old", "labels": {"team": "a", "os": "linux"}},
            "spec": {
                "unschedulable": True,
                "taints": [
                    {"key": "gpu", "value": "yes", "effect": "NoSchedule"},
                    {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
                ],
            },
        },
    )
    snapshot = nodes.NodeSnapshot.read(k8s, "w2")
    assert snapshot.taints == ({"key": "gpu", "value": "yes", "effect": "NoSchedule"},)
    api.add("nodes", {"metadata": {"name": "w2", "uid": "new", "labels": {"os": "linux"}}})
    nodes.restore_metadata(k8s, snapshot)
    restored = api.get("nodes", "w2")
    assert restored["metadata"]["labels"] == {"os": "linux", "team": "a"}
    assert restored["spec"] == {
        "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
        "unschedulable": True,
    }


def _pod_state(uid: str = "u1", restarts: int = 0, ready: bool = True, **extra: Any) -> dict:
    return {
        "metadata": {"namespace": "t1", "name": "p", "uid": uid, **extra.pop("meta", {})},
        "spec": {"nodeName": "w1"},
        "status": {
            "phase": extra.pop("phase", "Running"),
            "containerStatuses": [{"name": "main", "restartCount": restarts, "ready": ready}],
            "conditions": extra.pop("conditions", []),
        },
    }


def test_disturbances_name_every_way_a_pod_can_be_disturbed() -> None:
    baseline = PodBaseline.of(_pod_state())
    assert disturbances(baseline, _pod_state()) == []
    assert disturbances(baseline, None) == ["pod t1/p is gone"]
    assert "replaced" in disturbances(baseline, _pod_state(uid="u2"))[0]
    assert "restarted (restartCount 0 -> 1)" in disturbances(baseline, _pod_state(restarts=1))[0]
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


def test_the_sweep_restores_a_node_a_killed_test_deleted(
    api: FakeAPI, k8s, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.add("nodes", {"metadata": {"name": "w2", "uid": "old", "labels": {"team": "a"}}})
    api.add("pods", pod("plugin", ns="driver", node_name="w2", owner="DaemonSet"))
    api.add("pods", {**pod("proxy", ns="kube-system", node_name="w2", owner="DaemonSet")})
    api.get("pods", "proxy", "kube-system")["spec"]["hostNetwork"] = True
    registry = nodes.DeletedNodeRegistry(tmp_path / nodes.DELETED_NODES_DIR)
    registry.add(nodes.NodeSnapshot.read(k8s, "w2"), "c-worker2")
    k8s.core.delete_node("w2")
    restarted: list[str] = []

    def kubelet_registers(container: str) -> None:
        restarted.append(container)
        ready = {"conditions": [{"type": "Ready", "status": "True"}]}
        api.add("nodes", {"metadata": {"name": "w2", "uid": "new"}, "status": ready})

    def delete_pod_answers_the_pod(method: str, path: str, query: Any, body: Any):  # noqa: ANN202
        m = re.match(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)$", path)
        if method != "DELETE" or not m:
            return None
        return 200, api.objects.pop(("v1", "pods", m[1], m[2]))

    api.handlers.append(delete_pod_answers_the_pod)
    monkeypatch.setattr(nodes, "restart_kubelet", kubelet_registers)
    assert nodes.restore_recorded_nodes(k8s, registry, timeout=5) == ["w2"]
    assert restarted == ["c-worker2"]
    assert api.get("nodes", "w2")["metadata"]["labels"] == {"team": "a"}
    assert api.get("pods", "plugin", "driver") is None  # recreated by its DaemonSet
    assert api.get("pods", "proxy", "kube-system") is not None  # host network: kept
    assert registry.entries() == []
