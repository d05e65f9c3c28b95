"""What the controller reads of the nodes for the report (their build, the kind node image)
and how it reaches the run's facts; a failure to read is recorded, never raised."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from conformance.plugin import node_identity as identity
from conformance.plugin.run_facts import run_facts

INFO = {
    "kubelet_version": "v1.37.2",
    "container_runtime_version": "containerd://2.1.4",
    "os_image": "Debian GNU/Linux 12 (bookworm)",
    "kernel_version": "6.8.0",
}
IMAGE = {
    "ref": "localhost/dra-conformance/node:v1.37.2-0123",
    "image_id": "sha256:" + "ab" * 32,
    "repo_digests": [],
    "built_here": True,
}


def _context(provider: str = "kind", **changes: Any) -> Any:
    cluster = SimpleNamespace(
        kubeconfig="kc",
        context=None,
        provider=provider,
        name="c",
        node_containers={"cp": "cp", "w1": "w1", "w2": "w2"} if provider == "kind" else {},
    )
    profile = SimpleNamespace(
        driver="drv", source="p.yaml", capabilities=frozenset(), faults=SimpleNamespace(kinds=())
    )
    values = {
        "nodes": ("w1", "w2"),
        "cluster": cluster,
        "profile": profile,
        "git_version": "v1.37.2",
        "feature_gates": {},
        "served_resources": {},
        "devices": (),
        "device_sets": {},
        "run_id": "r1",
        "workload_image": "",
        "feature_gates_error": None,
        "readiness_failure": None,
        "devices_by_node": lambda: {"w1": ["a", "b"]},
    }
    values.update(changes)
    return SimpleNamespace(**values)


@pytest.fixture
def cluster_reads(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    asked: list[Any] = []

    def read_info(k8s: Any, names: Any) -> dict[str, Any]:
        asked.append(("nodes", tuple(names)))
        return {name: dict(INFO) for name in names}

    def read_images(containers: Any) -> dict[str, Any]:
        asked.append(("containers", dict(containers)))
        return {name: dict(IMAGE) for name in containers}

    monkeypatch.setattr(identity, "load_clients", lambda *a: SimpleNamespace())
    monkeypatch.setattr(identity, "read_node_info", read_info)
    monkeypatch.setattr(identity, "read_node_images", read_images)
    return asked


def test_a_kind_cluster_names_each_selected_nodes_build_and_image(cluster_reads: list) -> None:
    found = identity.node_identity(_context())
    assert found == {
        "nodes": {"w1": {**INFO, "node_image": IMAGE}, "w2": {**INFO, "node_image": IMAGE}},
        "nodes_error": "",
    }
    # only the nodes the profile selects: the control plane runs no driver
    assert cluster_reads[1] == ("containers", {"w1": "w1", "w2": "w2"})


def test_an_existing_cluster_has_no_node_image(cluster_reads: list) -> None:
    found = identity.node_identity(_context("existing"))
    assert found["nodes"] == {"w1": INFO, "w2": INFO}
    assert [what for what, _ in cluster_reads] == ["nodes"]


def test_what_cannot_be_read_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any) -> Any:
        raise PermissionError("nodes is forbidden (sent Bearer abcdef0123456789)")

    def no_engine(*args: Any) -> Any:
        raise RuntimeError("cannot reach a Docker engine\nmore")

    monkeypatch.setattr(identity, "load_clients", lambda *a: SimpleNamespace())
    monkeypatch.setattr(identity, "read_node_info", refuse)
    monkeypatch.setattr(identity, "read_node_images", no_engine)
    found = identity.node_identity(_context())
    assert found["nodes"] == {"w1": {}, "w2": {}}
    assert found["nodes_error"] == (
        "could not read the nodes: PermissionError: nodes is forbidden (sent Bearer <redacted>); "
        "could not read the node images: RuntimeError: cannot reach a Docker engine"
    )


def test_the_run_facts_carry_each_nodes_build(cluster_reads: list) -> None:
    context = _context("existing")
    facts = run_facts(context, None, identity.node_identity(context))
    assert facts.nodes == (
        {"name": "w1", "devices": 2, **INFO},
        {"name": "w2", "devices": 0, **INFO},
    )
    assert facts.nodes_error == ""
    assert run_facts(context).nodes == ({"name": "w1", "devices": 2}, {"name": "w2", "devices": 0})
