"""Scenarios and `conformance/kube/` never ask which cluster they run on: node operations go
through the run's node access (conformance.node_access), chosen once. What would let them ask
or reach a node themselves - the cluster provider's name, the kind node containers, Docker, a
host subprocess - appears nowhere in their source (the text, comments included, as `grep`
sees it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TREES = ("scenarios", "conformance/kube")
CLUSTER_KIND = re.compile(r"provider|node_containers|docker")
HOST_PROCESS_MODULES = {"subprocess", "docker", "conformance.docker_client"}


def sources() -> list[Path]:
    found = sorted(p for tree in TREES for p in (ROOT / tree).rglob("*.py"))
    assert len(found) > 50, f"expected the scenario and kube sources under {ROOT}"
    return found


def cluster_kind_mentions(text: str) -> list[str]:
    return [
        f"{n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if CLUSTER_KIND.search(line)
    ]


def host_process_imports(text: str) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            names += [base, *(f"{base}.{a.name}" for a in node.names)]
    return sorted({n for n in names if n in HOST_PROCESS_MODULES})


def test_no_source_names_the_cluster_kind_or_docker() -> None:
    found = {
        str(path.relative_to(ROOT)): hits
        for path in sources()
        if (hits := cluster_kind_mentions(path.read_text()))
    }
    assert not found, f"branch on the node access (conformance.node_access) instead: {found}"


def test_no_source_runs_host_processes() -> None:
    found = {
        str(path.relative_to(ROOT)): hits
        for path in sources()
        if (hits := host_process_imports(path.read_text()))
    }
    assert not found, f"run node commands through conformance.node_access: {found}"


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ('if dra_context.cluster.provider != "kind":\n    pass\n', True),
        ("c = cluster.node_containers[node]\n", True),
        ("from conformance import docker_client\n", True),
        ("node_access.restart_kubelet(node)\n", False),
    ],
)
def test_the_check_catches_a_branch(source: str, caught: bool) -> None:
    assert bool(cluster_kind_mentions(source)) is caught


def test_the_check_catches_a_host_process() -> None:
    assert host_process_imports("import subprocess\nfrom conformance import docker_client\n") == [
        "conformance.docker_client",
        "subprocess",
    ]
    assert host_process_imports("from conformance.kube import state\n") == []
