"""Namespaces, the end-of-run sweep and cluster-scoped objects against the real test API
server; namespace deletion is finished by the real namespace controller. Each test uses a run
id of its own: the sweep deletes everything labelled with it, cluster-wide."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.dra_objects import claim, namespace, node
from kube_apiserver.server import ClusterScoped, unique_name
from kubernetes.client.exceptions import ApiException

from conformance.kube import objects as kube_objects
from conformance.kube.builders import Builders
from conformance.kube.cleanup import (
    NamespaceRegistry,
    create_test_namespace,
    release_namespace,
    sweep_run,
)
from conformance.kube.client import K8sClients
from conformance.kube.objects import ClusterObjects
from conformance.model.naming import CORDONED_BY_LABEL, RUN_LABEL

D = "gpu.example.com"
RG = "resource.k8s.io/v1"


@pytest.fixture
def run_id() -> str:
    return unique_name("run")


def _read(call: Any, *args: Any) -> Any:
    try:
        return call(*args)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def test_namespace_registry_and_sweep(
    apiserver_k8s: K8sClients, cluster_scoped: ClusterScoped, run_id: str, tmp_path: Path
) -> None:
    core = apiserver_k8s.core
    registry = NamespaceRegistry(tmp_path / "ns")
    builders = Builders(run_id)
    ours, other = unique_name("dra-a"), unique_name("other-run")
    create_test_namespace(apiserver_k8s, builders, registry, ours, "tests/x.py::test_a")
    cluster_scoped.track("v1", "Namespace", ours)  # should the sweep fail to
    assert core.read_namespace(ours).metadata.labels[RUN_LABEL] == run_id
    assert [r["namespace"] for r in registry.entries()] == [ours]
    core.create_namespaced_config_map(ours, {"metadata": {"name": "in-the-namespace"}})
    cluster_scoped.create(namespace(other, {RUN_LABEL: unique_name("run-0")}))
    rule, high, worker = unique_name("t"), unique_name("high"), unique_name("w1")
    created = ClusterObjects(apiserver_k8s)
    created.create(builders.device_taint_rule(rule, driver=D, key="k", effect="NoExecute"))
    created.create(builders.priority_class(high, 100))
    cluster_scoped.track(RG, "DeviceTaintRule", rule)
    cluster_scoped.track("scheduling.k8s.io/v1", "PriorityClass", high)
    cluster_scoped.create(node(worker, {CORDONED_BY_LABEL: run_id}))
    core.patch_node(worker, {"spec": {"unschedulable": True}})

    result = sweep_run(apiserver_k8s, run_id, registry, timeout=180, api_versions=[RG])

    assert result.namespaces == [ours]
    assert result.cluster_objects == [f"DeviceTaintRule/{rule}", f"PriorityClass/{high}"]
    assert result.uncordoned == [worker]
    assert result.leftovers == []
    assert _read(core.read_namespace, ours) is None  # the namespace controller finished it
    assert _read(core.read_namespace, other) is not None  # another run's: untouched
    after = core.read_node(worker)
    assert not after.spec.unschedulable and CORDONED_BY_LABEL not in (after.metadata.labels or {})
    assert registry.entries() == []
    assert result.summary() == (
        f"cleaned up 1 namespace(s); 2 cluster object(s): "
        f"DeviceTaintRule/{rule}, PriorityClass/{high}; uncordoned {worker}"
    )


@pytest.fixture
def held_namespace(apiserver_k8s: K8sClients, run_id: str) -> Iterator[str]:
    """A namespace of the run that a finalizer nobody removes keeps in Terminating."""
    name = unique_name("dra-stuck")
    body = namespace(name, {RUN_LABEL: run_id})
    body["metadata"]["finalizers"] = ["example.com/hold"]
    apiserver_k8s.core.create_namespace(body)
    yield name
    apiserver_k8s.core.patch_namespace(name, {"metadata": {"finalizers": None}})
    _read(apiserver_k8s.core.delete_namespace, name)


def test_sweep_names_what_is_stuck(
    apiserver_k8s: K8sClients, held_namespace: str, run_id: str
) -> None:
    result = sweep_run(apiserver_k8s, run_id, None, timeout=2, api_versions=[])
    assert result.leftovers == [f"namespace/{held_namespace}"]
    assert result.summary().endswith(f"STILL PRESENT: namespace/{held_namespace}")
    phase = apiserver_k8s.core.read_namespace(held_namespace).status.phase
    assert phase == "Terminating"  # deleted, held by its finalizer


def test_cluster_objects_are_deleted_in_reverse(
    apiserver_k8s: K8sClients,
    api_namespace: str,
    cluster_scoped: ClusterScoped,
    run_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deletes: list[str] = []
    real_delete = kube_objects.delete

    def recording_delete(k8s: K8sClients, kind: str, name: str, **kwargs: Any) -> Any:
        deletes.append(f"{kind}/{name}")
        return real_delete(k8s, kind, name, **kwargs)

    monkeypatch.setattr(kube_objects, "delete", recording_delete)
    created = ClusterObjects(apiserver_k8s)
    builders = Builders(run_id)
    device_class, rule = unique_name("c"), unique_name("t")
    created.create(builders.device_class(device_class))
    cluster_scoped.track(RG, "DeviceClass", device_class)
    created.create(builders.device_taint_rule(rule, driver=D, key="k", effect="NoSchedule"))
    cluster_scoped.track(RG, "DeviceTaintRule", rule)
    cl = {**claim("cl", device_class), "metadata": {"name": "cl", "namespace": api_namespace}}
    created.create(cl)  # namespaced: goes with its namespace
    assert created.delete_all() == []
    assert deletes == [f"DeviceTaintRule/{rule}", f"DeviceClass/{device_class}"]
    resource = apiserver_k8s.resource
    assert _read(resource.read_device_taint_rule, rule) is None
    assert _read(resource.read_device_class, device_class) is None
    assert resource.read_namespaced_resource_claim("cl", api_namespace) is not None


def _workload_controller(kind: str, name: str) -> dict[str, Any]:
    labels = {"app": name}
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "workload"}]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template},
    }


def test_released_namespace_keeps_no_controller_that_would_make_pods_again(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    apps = apiserver_k8s.apps
    apps.create_namespaced_deployment(api_namespace, _workload_controller("Deployment", "d"))
    apps.create_namespaced_replica_set(api_namespace, _workload_controller("ReplicaSet", "d-1"))
    assert release_namespace(apiserver_k8s, api_namespace, timeout=120) is None
    # Right away, not once the namespace controller gets to them: until then a ReplicaSet
    # replaces every pod the release deleted, and the new pods take devices again.
    left = apps.list_namespaced_deployment(api_namespace).items
    left += apps.list_namespaced_replica_set(api_namespace).items
    assert not left, [f"{o.kind}/{o.metadata.name}" for o in left]
