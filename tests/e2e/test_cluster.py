"""Cluster up -> smoke -> status -> reuse, on a real kind cluster (offline node image here)."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
from kubernetes.client import CoordinationV1Api
from kubernetes.client.exceptions import ApiException

from conformance.cluster import kind, smoke, status
from conformance.errors import ClusterError


def test_three_nodes_ready_at_v1_37_2(kind_cluster):
    k8s = kind_cluster.clients()
    nodes = [k8s.to_dict(n) for n in k8s.core.list_node().items]
    assert len(nodes) == 3
    for node in nodes:
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", node["metadata"]["name"]
        assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.2"
    assert k8s.version.get_code().git_version == "v1.37.2"


def test_smoke_pods_on_every_worker_reach_api_via_service(kind_cluster, workload_image):
    result = smoke.run_smoke(str(kind_cluster.kubeconfig), workload_image)
    assert result.problems == []
    assert len(result.workers) == 2
    assert set(result.pods_ran_on.values()) == {"Succeeded"}
    assert all(result.api_via_service.values())
    assert set(smoke.DRA_RESOURCES) <= set(result.served_dra_resources)


def test_dra_beta_gates_enabled_and_cdi_on(kind_cluster):
    metrics = kind_cluster.clients().get_raw("/metrics", accept="text/plain")
    gates = status.dra_gates(metrics)
    for gate in (
        "DRAPartitionableDevices",
        "DRAConsumableCapacity",
        "DRADeviceBindingConditions",
        "ResourceHealthStatus",
        "DRADeviceTaintRules",
    ):
        assert gates.get(gate) is True, f"{gate}: {gates.get(gate)}"
    node = kind_cluster.nodes()[0]
    config = subprocess.run(
        ["docker", "exec", node, "containerd", "config", "dump"], capture_output=True, text=True
    ).stdout
    # containerd 2.4 has CDI always on (no enable_cdi key); it must scan the dynamic spec dir.
    match = re.search(r"cdi_spec_dirs\s*=\s*\[([^\]]*)\]", config)
    assert match and "/var/run/cdi" in match.group(1), "containerd does not read /var/run/cdi"
    assert not re.search(r"enable_cdi\s*=\s*false", config)


def test_controller_manager_and_scheduler_run_without_leader_election(kind_cluster):
    """One control plane: neither component renews a leader Lease every 2 s."""
    k8s = kind_cluster.clients()
    for component in ("kube-controller-manager", "kube-scheduler"):
        [pod] = k8s.core.list_namespaced_pod(
            "kube-system", label_selector=f"component={component}"
        ).items
        command = pod.spec.containers[0].command
        assert "--leader-elect=false" in command, command
        with pytest.raises(ApiException) as missing:
            CoordinationV1Api(k8s.api_client).read_namespaced_lease(component, "kube-system")
        assert missing.value.status == 404, component


def test_second_up_reuses_healthy_cluster(kind_cluster, progress):
    start = time.monotonic()
    again = kind.up(name=kind_cluster.name, workers=2, progress=progress)
    assert again.kubeconfig == kind_cluster.kubeconfig
    assert time.monotonic() - start < 60


def test_up_reuses_a_cluster_as_it_is_and_never_reshapes_it(kind_cluster, progress):
    # `run` asks for no worker count: the cluster is reused whatever its shape
    reused = kind.up(name=kind_cluster.name, progress=progress)
    assert reused.options.workers == 2
    # an explicit other count is an error, not a deletion of the user's cluster
    with pytest.raises(ClusterError, match=r"exists with 2 worker node\(s\), not 3"):
        kind.up(name=kind_cluster.name, workers=3, progress=progress)
    assert kind_cluster.ready_workers() == 2


def test_cli_kubeconfig_and_status(kind_cluster):
    cli = [sys.executable, "-m", "conformance.cli", "cluster"]
    out = subprocess.run(
        [*cli, "kubeconfig", "--name", kind_cluster.name],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == str(kind_cluster.kubeconfig)
    text = subprocess.run(
        [*cli, "status", "--name", kind_cluster.name], capture_output=True, text=True, check=True
    ).stdout
    assert "server version: v1.37.2" in text
    assert "devicetaintrules" in text


def test_cli_unknown_cluster_is_a_clear_error():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "cluster",
            "kubeconfig",
            "--name",
            "no-such-cluster",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "dra-conformance cluster up --name no-such-cluster" in result.stderr
