"""conformance.metrics against the real test API server: what RBAC and the node proxy decide
(a forbidden kubelet, a node with no kubelet behind it, no scheduler pod) and the inventory read
from real claims and slices."""

from __future__ import annotations

from pathlib import Path

from kube_apiserver.access import clients_with_rules
from kube_apiserver.server import ApiServer, ClusterScoped, unique_name

from conformance.kube.client import K8sClients
from conformance.metrics.inventory import read_cluster_inventory
from conformance.metrics.operations import driver_operations
from conformance.metrics.scrape import SCHEDULER, take_snapshot
from conformance.report.driver_markdown import driver_operations_section

READ_NODES_AND_PODS = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
]


def _node(cluster_scoped: ClusterScoped) -> str:
    name = unique_name("metrics-node")
    cluster_scoped.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    return name


def test_a_kubelet_the_account_may_not_proxy_to_is_forbidden_never_zero(
    kube_apiserver: ApiServer,
    apiserver_k8s: K8sClients,
    cluster_scoped: ClusterScoped,
    api_namespace: str,
    tmp_path: Path,
) -> None:
    node = _node(cluster_scoped)
    restricted = clients_with_rules(
        kube_apiserver, apiserver_k8s, cluster_scoped, api_namespace, READ_NODES_AND_PODS, tmp_path
    )
    snapshot = take_snapshot(restricted, (SCHEDULER,))
    assert f"kubelet {node}" not in snapshot.sources
    assert snapshot.unavailable[f"kubelet {node}"].startswith("forbidden (HTTP 403): ")
    assert snapshot.unavailable["kube-scheduler"] == (
        "no pod labelled component=kube-scheduler in kube-system (a managed control plane)"
    )
    # what the run's report makes of two such reads: not available, with the API server's why
    ops = driver_operations(snapshot, take_snapshot(restricted, (SCHEDULER,)))
    assert ops["grpc"] is None and ops["kubelet_operations"] is None
    assert "forbidden (HTTP 403): " in ops["unavailable"]["grpc"]
    assert "nodes/proxy" in ops["unavailable"]["grpc"]  # RBAC's message names the resource
    text = "\n".join(driver_operations_section({"driver_operations": ops}))
    assert "- kubelet → driver (gRPC): not available (kubelet " in text


def test_a_node_without_a_reachable_kubelet_is_not_available_with_why(
    apiserver_k8s: K8sClients, cluster_scoped: ClusterScoped
) -> None:
    node = _node(cluster_scoped)  # no address, no kubelet: the proxy has nowhere to go
    snapshot = take_snapshot(apiserver_k8s, ())
    assert f"kubelet {node}" not in snapshot.sources
    assert snapshot.unavailable[f"kubelet {node}"].startswith("HTTP ")


def test_the_inventory_reads_real_claims_and_slices(
    apiserver_k8s: K8sClients, cluster_scoped: ClusterScoped, api_namespace: str
) -> None:
    node, driver = _node(cluster_scoped), f"{unique_name('inv')}.example.com"
    tainted = {"name": "dev-1", "taints": [{"key": "example.com/bad", "effect": "NoSchedule"}]}
    cluster_scoped.create(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": unique_name("inv-slice")},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "dev-0"}, tainted],
            },
        }
    )
    apiserver_k8s.resource.create_namespaced_resource_claim(
        api_namespace,
        {
            "metadata": {"name": "pending"},
            "spec": {
                "devices": {
                    "requests": [{"name": "r", "exactly": {"deviceClassName": "any-class"}}]
                }
            },
        },
    )
    inventory = read_cluster_inventory(apiserver_k8s)
    assert [p for p in inventory["pools"] if p["driver"] == driver] == [
        {"driver": driver, "pool": node, "devices": 2, "allocated": 0, "free": 2, "tainted": 1}
    ]
    assert inventory["claims"]["pending"] >= 1
    assert inventory["claims"]["total"] >= inventory["claims"]["pending"]
