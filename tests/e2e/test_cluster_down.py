"""Runs last in the session (marker `e2e_last`, ordered by tests/e2e/conftest.py): `cluster down`
removes the nodes and the kubeconfig."""

import subprocess
import sys

import pytest

from conformance import docker_client


@pytest.mark.e2e_last
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
