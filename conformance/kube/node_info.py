"""What each node runs, as its kubelet reports it (Node.status.nodeInfo): the kubelet's
version, the container runtime's, the OS image and the kernel. The report names the
Kubernetes build the driver was tested on by these, next to the API server's version.

The parsing is pure (nodes as the API serves them, camelCase dicts); `read_node_info` is the
one call to the API server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from conformance.kube.client import K8sClients

API_TIMEOUT_S = 30
# nodeInfo's field -> the report's key (summary.json keys are snake_case).
NODE_INFO_FIELDS = {
    "kubeletVersion": "kubelet_version",
    "containerRuntimeVersion": "container_runtime_version",
    "osImage": "os_image",
    "kernelVersion": "kernel_version",
}


def node_info(node: Mapping[str, Any]) -> dict[str, str | None]:
    """The report's fields of one Node's status.nodeInfo (None for a field it lacks)."""
    info = (node.get("status") or {}).get("nodeInfo") or {}
    return {
        key: (str(info[field]) if info.get(field) else None)
        for field, key in NODE_INFO_FIELDS.items()
    }


def nodes_info(
    nodes: Iterable[Mapping[str, Any]], names: Iterable[str]
) -> dict[str, dict[str, Any]]:
    """name -> node_info of each of `names` among `nodes` (a name not found is left out)."""
    by_name = {(n.get("metadata") or {}).get("name"): n for n in nodes}
    return {name: node_info(by_name[name]) for name in names if name in by_name}


def read_node_info(k8s: K8sClients, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """nodes_info of the cluster's Nodes named `names`. API errors are raised: the caller
    decides what a failure means."""
    listing = k8s.core.list_node(_request_timeout=API_TIMEOUT_S)
    return nodes_info((k8s.to_dict(n) for n in listing.items), names)
