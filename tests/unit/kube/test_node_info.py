"""Each node's build as its kubelet reports it (Node.status.nodeInfo), in the report's keys."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from conformance.kube.node_info import node_info, nodes_info, read_node_info

INFO = {
    "kubeletVersion": "v1.37.2",
    "containerRuntimeVersion": "containerd://2.1.4",
    "osImage": "Debian GNU/Linux 12 (bookworm)",
    "kernelVersion": "6.8.0-45-generic",
    "machineID": "not reported",
}


def _node(name: str, info: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"nodeInfo": info or {}}}


def test_the_kubelets_report_in_the_reports_keys() -> None:
    assert node_info(_node("w1", INFO)) == {
        "kubelet_version": "v1.37.2",
        "container_runtime_version": "containerd://2.1.4",
        "os_image": "Debian GNU/Linux 12 (bookworm)",
        "kernel_version": "6.8.0-45-generic",
    }


def test_a_node_that_reports_nothing_yet_has_every_field_empty() -> None:
    assert set(node_info({"metadata": {"name": "w1"}}).values()) == {None}


def test_only_the_named_nodes_are_described() -> None:
    nodes = [_node("cp", INFO), _node("w1", INFO), _node("w2", {"kubeletVersion": "v1.36.3"})]
    found = nodes_info(nodes, ["w1", "w2", "gone"])
    assert sorted(found) == ["w1", "w2"]
    assert found["w2"]["kubelet_version"] == "v1.36.3"


def test_read_node_info_lists_the_nodes_once() -> None:
    calls: list[Any] = []

    def list_node(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return SimpleNamespace(items=[_node("w1", INFO), _node("cp", INFO)])

    k8s = SimpleNamespace(core=SimpleNamespace(list_node=list_node), to_dict=lambda n: n)
    assert list(read_node_info(k8s, ["w1"])) == ["w1"]  # type: ignore[arg-type]
    assert len(calls) == 1
