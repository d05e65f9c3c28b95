"""Runs last in the e2e tier: `cluster down` removes the nodes and the kubeconfig."""

import subprocess
import sys

from conformance.cluster import docker_client


def test_cluster_down_removes_nodes(kind_cluster):
    nodes = kind_cluster.nodes()
    subprocess.run(
        [sys.executable, "-m", "conformance.cli", "cluster", "down", "--name", kind_cluster.name],
        check=True,
        capture_output=True,
    )
    names = {c.name for c in docker_client.client().containers.list(all=True)}
    assert not names & set(nodes)
    assert not kind_cluster.kubeconfig.exists()
