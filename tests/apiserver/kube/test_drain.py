"""Cordon, drain and node restore against the real test API server: the Eviction API, its
PodDisruptionBudget check and its UID precondition are the server's. What the absent
controllers and kubelet would write (a budget's status, a pod's readiness, a re-registered
Node) the tests write themselves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.dra_objects import node, pod
from kube_apiserver.server import ClusterScoped, unique_name
from kubernetes.client.exceptions import ApiException

from conformance.kube import drain, nodes
from conformance.kube.client import K8sClients
from conformance.model.naming import CORDONED_BY_LABEL


@pytest.fixture
def worker(cluster_scoped: ClusterScoped) -> str:
    return cluster_scoped.create(node(unique_name("w1")))["metadata"]["name"]


@pytest.fixture
def other_namespace(apiserver_k8s: K8sClients) -> Iterator[str]:
    name = unique_name("t2")
    apiserver_k8s.core.create_namespace({"metadata": {"name": name}})
    yield name
    apiserver_k8s.core.delete_namespace(name)


def _pod(name: str, node_name: str, owner: str | None = None, **spec: Any) -> dict[str, Any]:
    # Grace 0: with no kubelet to confirm, an evicted pod is gone at once only so.
    body = pod(name, node_name=node_name, grace=0)
    body["metadata"]["labels"] = {"app": name}
    body["spec"].update(spec)
    if owner:
        body["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner, "name": "o", "uid": "o1", "controller": True}
        ]
    return body


def _running_and_ready(k8s: K8sClients, ns: str, name: str) -> None:
    """The kubelet's part: a budget counts only Ready pods as healthy."""
    ready = {"type": "Ready", "status": "True"}
    k8s.core.patch_namespaced_pod_status(
        name, ns, {"status": {"phase": "Running", "conditions": [ready]}}
    )


def _budget(k8s: K8sClients, ns: str, app: str, allowed: int) -> None:
    """A PodDisruptionBudget for pod `app`, with the status the disruption controller (absent
    here) would write: `allowed` evictions."""
    k8s.policy.create_namespaced_pod_disruption_budget(
        ns,
        {
            "metadata": {"name": app},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
        },
    )
    _allow(k8s, ns, app, allowed)


def _allow(k8s: K8sClients, ns: str, app: str, allowed: int) -> None:
    generation = k8s.policy.read_namespaced_pod_disruption_budget(app, ns).metadata.generation
    status = {
        "observedGeneration": generation,
        "disruptionsAllowed": allowed,
        "currentHealthy": 1 + allowed,
        "desiredHealthy": 1,
        "expectedPods": 1 + allowed,
    }
    k8s.policy.patch_namespaced_pod_disruption_budget_status(app, ns, {"status": status})


def test_cordon_labels_for_the_sweep_and_uncordon_undoes_it(
    apiserver_k8s: K8sClients, worker: str
) -> None:
    with drain.cordoned(apiserver_k8s, worker, "run-1") as ours:
        assert ours
        during = apiserver_k8s.core.read_node(worker)
        assert during.spec.unschedulable is True
        assert during.metadata.labels[CORDONED_BY_LABEL] == "run-1"
    after = apiserver_k8s.core.read_node(worker)
    assert not after.spec.unschedulable
    assert CORDONED_BY_LABEL not in (after.metadata.labels or {})


def test_cordoned_uncordons_on_failure_but_leaves_an_admins_cordon(
    apiserver_k8s: K8sClients, worker: str
) -> None:
    core = apiserver_k8s.core
    with pytest.raises(KeyboardInterrupt), drain.cordoned(apiserver_k8s, worker, "run-1"):
        raise KeyboardInterrupt
    assert not core.read_node(worker).spec.unschedulable
    core.patch_node(worker, {"spec": {"unschedulable": True}})  # cordoned by someone else
    with drain.cordoned(apiserver_k8s, worker, "run-1") as ours:
        assert not ours
    assert core.read_node(worker).spec.unschedulable is True
    assert CORDONED_BY_LABEL not in (core.read_node(worker).metadata.labels or {})


def test_drain_retries_refused_evictions_and_leaves_daemonset_pods(
    apiserver_k8s: K8sClients, api_namespace: str, other_namespace: str, worker: str
) -> None:
    core, t1, t2 = apiserver_k8s.core, api_namespace, other_namespace
    for ns, body in (
        (t1, _pod("a", worker)),
        (t1, _pod("b", worker)),
        (t2, _pod("plugin", worker, owner="DaemonSet")),
        (t1, _pod("elsewhere", unique_name("w2"))),
        (t2, _pod("other-test", worker)),
    ):
        core.create_namespaced_pod(ns, body)
    _running_and_ready(apiserver_k8s, t1, "b")
    _budget(apiserver_k8s, t1, "b", allowed=0)
    seen: list[int] = []

    def progress(result: drain.DrainResult) -> None:
        seen.append(len(result.attempts))
        if len(result.refusals()) == 2:  # the budget opens after two refusals
            _allow(apiserver_k8s, t1, "b", 1)

    result = drain.drain(
        apiserver_k8s,
        worker,
        run_id="run-1",
        timeout=120,
        namespaces=[t1],
        on_progress=progress,
        retry_interval=0.01,
    )
    assert [(a.pod.name, a.status) for a in result.attempts] == [
        ("a", 201),
        ("b", 429),
        ("b", 429),
        ("b", 201),
    ]
    assert "disruption budget" in result.refusals()[0].message
    assert [p.name for p in result.evicted] == ["a", "b"]
    assert result.evicted_at(result.evicted[1]) >= result.refusals()[-1].at
    assert [p.name for p in result.left] == ["plugin"]
    assert set(result.gone_at) == set(result.evicted)
    assert core.read_namespaced_pod("other-test", t2) is not None  # not this test's namespace
    assert core.read_namespaced_pod("elsewhere", t1) is not None  # another node's
    assert core.read_node(worker).spec.unschedulable is True  # the caller uncordons
    assert seen == [2, 3, 4]


def test_drain_names_what_is_stuck(
    apiserver_k8s: K8sClients, api_namespace: str, worker: str
) -> None:
    apiserver_k8s.core.create_namespaced_pod(api_namespace, _pod("stuck", worker))
    _running_and_ready(apiserver_k8s, api_namespace, "stuck")
    _budget(apiserver_k8s, api_namespace, "stuck", allowed=0)
    with pytest.raises(drain.DrainError, match=rf"{api_namespace}/stuck .*would violate"):
        drain.drain(apiserver_k8s, worker, run_id="r", timeout=0.05, retry_interval=0.01)


def test_node_snapshot_and_restore_of_what_the_kubelet_does_not_set(
    apiserver_k8s: K8sClients, cluster_scoped: ClusterScoped
) -> None:
    core, name = apiserver_k8s.core, unique_name("w2")
    body = node(name, {"team": "a", "os": "linux"})
    body["spec"] = {
        "unschedulable": True,
        "taints": [
            {"key": "gpu", "value": "yes", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
        ],
    }
    old = cluster_scoped.create(body)
    snapshot = nodes.NodeSnapshot.read(apiserver_k8s, name)
    assert snapshot.taints == ({"key": "gpu", "value": "yes", "effect": "NoSchedule"},)
    # The node registers again: a new object with only what the kubelet sets.
    core.delete_node(name)
    new = core.create_node(node(name, {"os": "linux"}))
    assert new.metadata.uid != old["metadata"]["uid"]
    nodes.restore_metadata(apiserver_k8s, snapshot)
    restored = apiserver_k8s.to_dict(core.read_node(name))
    assert restored["metadata"]["labels"] == {"os": "linux", "team": "a"}
    assert restored["spec"]["unschedulable"] is True
    taints = restored["spec"]["taints"]
    assert {"key": "gpu", "value": "yes", "effect": "NoSchedule"} in taints
    # What the API server's admission put on the new node stays; the snapshot's not-ready
    # NoExecute taint (the node lifecycle controller's) is not brought back.
    assert {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"} not in [
        {k: t[k] for k in ("key", "effect")} for t in taints
    ]


def test_the_sweep_restores_a_node_a_killed_test_deleted(
    apiserver_k8s: K8sClients,
    api_namespace: str,
    cluster_scoped: ClusterScoped,
    tmp_path: Path,
) -> None:
    core, name = apiserver_k8s.core, unique_name("w2")
    old = cluster_scoped.create(node(name, {"team": "a"}))
    proxy = unique_name("proxy")
    plugin = pod("plugin", node_name=name)  # the default grace: deleting it only marks it
    plugin["metadata"]["ownerReferences"] = _pod("x", name, owner="DaemonSet")["metadata"][
        "ownerReferences"
    ]
    core.create_namespaced_pod(api_namespace, plugin)
    core.create_namespaced_pod(
        "kube-system", _pod(proxy, name, owner="DaemonSet", hostNetwork=True)
    )
    try:
        registry = nodes.DeletedNodeRegistry(tmp_path / nodes.DELETED_NODES_DIR)
        registry.add(nodes.NodeSnapshot.read(apiserver_k8s, name))
        core.delete_node(name)
        restarted: list[str] = []

        def kubelet_registers(node_name: str) -> None:
            # The kubelet's part: a new Node object that turns Ready.
            restarted.append(node_name)
            core.create_node(node(name))
            ready = {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}
            core.patch_node_status(name, {"status": ready})

        restored_names = nodes.restore_recorded_nodes(
            apiserver_k8s, registry, kubelet_registers, timeout=120
        )
        assert restored_names == [name]
        assert restarted == [name]
        restored = core.read_node(name)
        assert restored.metadata.uid != old["metadata"]["uid"]
        assert restored.metadata.labels == {"team": "a"}
        # Deleted, for its DaemonSet to recreate it (graceful: no kubelet here to finish it).
        assert core.read_namespaced_pod("plugin", api_namespace).metadata.deletion_timestamp
        assert core.read_namespaced_pod(proxy, "kube-system").metadata.deletion_timestamp is None
        assert registry.entries() == []
    finally:
        for pod_name, ns in (("plugin", api_namespace), (proxy, "kube-system")):
            try:
                core.delete_namespaced_pod(pod_name, ns, grace_period_seconds=0)
            except ApiException as exc:
                if exc.status != 404:
                    raise
