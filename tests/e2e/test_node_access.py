"""Node operations through a short-lived privileged pod (conformance.node_access.pod), the way
an in-cluster run reaches a node when its profile allows it, on the real kind cluster: what the
pod reads of a node's files and CDI spec directories is what the node's container holds (read
through the Docker SDK), a failing command is an error naming it, and no pod is left behind.
"""

from __future__ import annotations

import json
import uuid

import pytest

from conformance.cluster import kind
from conformance.kube.client import K8sClients
from conformance.model.cdi_paths import DEFAULT_SPEC_DIRS
from conformance.model.naming import RUN_LABEL
from conformance.node_access import NodeAccess
from conformance.node_access.chain import FirstAvailable
from conformance.node_access.kind import KindNodeContainers
from conformance.node_access.pod import PrivilegedPods

NAMESPACE = "kube-system"


@pytest.fixture(scope="module")
def run_id() -> str:
    return f"e2e-node-access-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def worker(kind_cluster: kind.KindCluster) -> str:
    return next(n for n in kind_cluster.nodes() if "control-plane" not in n)


@pytest.fixture(scope="module")
def by_pod(k8s: K8sClients, workload_image: str, run_id: str) -> NodeAccess:
    return FirstAvailable([PrivilegedPods(lambda: k8s, NAMESPACE, workload_image, run_id, 60)])


@pytest.fixture(scope="module")
def by_docker(kind_cluster: kind.KindCluster) -> NodeAccess:
    nodes = kind_cluster.nodes()
    return FirstAvailable([KindNodeContainers(kind_cluster.name, {n: n for n in nodes})])


def test_a_privileged_pod_reads_a_host_file(
    by_pod: NodeAccess, by_docker: NodeAccess, worker: str
) -> None:
    seen = by_pod.read_host_file(worker, "/etc/hostname")
    assert seen.strip() == worker, f"the pod read {seen!r}, not node {worker}'s own hostname"
    machine_id = by_pod.read_host_file(worker, "/etc/machine-id")
    assert machine_id == by_docker.read_host_file(worker, "/etc/machine-id")


def test_a_privileged_pod_lists_the_nodes_cdi_specs(
    by_pod: NodeAccess, by_docker: NodeAccess, worker: str, run_id: str
) -> None:
    spec = f"{DEFAULT_SPEC_DIRS[-1]}/{run_id}.json"
    body = json.dumps({"cdiVersion": "0.6.0", "kind": "e2e.example.com/node", "devices": []})
    by_docker.run(
        worker, ["sh", "-c", f"mkdir -p {DEFAULT_SPEC_DIRS[-1]} && echo '{body}' >{spec}"]
    )
    try:
        listed = by_pod.list_cdi_specs(worker, DEFAULT_SPEC_DIRS)
        assert spec in listed, f"{spec} written on {worker} is not in the pod's listing {listed}"
        assert listed == by_docker.list_cdi_specs(worker, DEFAULT_SPEC_DIRS)
    finally:
        by_docker.run(worker, ["rm", "-f", spec])
    assert spec not in by_pod.list_cdi_specs(worker, DEFAULT_SPEC_DIRS)


def test_a_failing_command_names_it_and_no_pod_stays(
    by_pod: NodeAccess, k8s: K8sClients, worker: str, run_id: str
) -> None:
    with pytest.raises(RuntimeError, match=r"cat /no/such/file in pod kube-system/.* exited 1"):
        by_pod.read_host_file(worker, "/no/such/file")
    left = k8s.core.list_namespaced_pod(NAMESPACE, label_selector=f"{RUN_LABEL}={run_id}").items
    assert [p for p in left if not p.metadata.deletion_timestamp] == []
