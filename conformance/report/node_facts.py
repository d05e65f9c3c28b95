"""The build the driver ran on, as summary.md and the Allure environment show it from
summary.json's `cluster.nodes`: kubelet, container runtime, OS image and kernel of each node,
and the node image of a kind cluster of the suite's. Nodes that run the same build share one
line, so a uniform cluster takes one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def node_image_reference(image: Mapping[str, Any]) -> str:
    """`ref (digest)`: the registry digest of a pulled image, else the Docker image ID (a
    locally built image has no other), and whether the suite built it."""
    ref = str(image.get("ref") or "?")
    digests = [str(d).rsplit("@", 1)[-1] for d in image.get("repo_digests") or ()]
    pinned = digests[0] if digests else f"image ID {image.get('image_id') or 'unknown'}"
    built = ", built here" if image.get("built_here") else ""
    return f"{ref} ({pinned}{built})"


def node_build(node: Mapping[str, Any]) -> str:
    """One node's build in one line ("" when nothing of it was read)."""
    parts = [
        f"kubelet {node['kubelet_version']}" if node.get("kubelet_version") else "",
        str(node.get("container_runtime_version") or ""),
        str(node.get("os_image") or ""),
        f"kernel {node['kernel_version']}" if node.get("kernel_version") else "",
    ]
    text = ", ".join(p for p in parts if p)
    if node.get("node_image"):
        image = f"node image `{node_image_reference(node['node_image'])}`"
        text = f"{text}; {image}" if text else image
    return text


def build_lines(cluster: Mapping[str, Any]) -> list[str]:
    """summary.md's lines under "nodes": each distinct build, with its nodes when they differ."""
    groups: dict[str, list[str]] = {}
    for node in cluster.get("nodes") or ():
        if build := node_build(node):
            groups.setdefault(build, []).append(str(node.get("name")))
    out = [
        f"  - {build}" + (f" ({', '.join(names)})" if len(groups) > 1 else "")
        for build, names in groups.items()
    ]
    if cluster.get("nodes_error"):
        out.append(f"  - node facts incomplete: {' '.join(str(cluster['nodes_error']).split())}")
    return out


def _distinct(values: list[Any]) -> str:
    return ", ".join(dict.fromkeys(str(v) for v in values if v))


def build_properties(cluster: Mapping[str, Any]) -> dict[str, str]:
    """The Allure environment's rows of the nodes' build (each distinct value once)."""
    nodes = list(cluster.get("nodes") or ())
    images = [node_image_reference(n["node_image"]) for n in nodes if n.get("node_image")]
    return {
        "Cluster.kubelet": _distinct([n.get("kubelet_version") for n in nodes]),
        "Cluster.runtime": _distinct([n.get("container_runtime_version") for n in nodes]),
        "Cluster.os": _distinct([n.get("os_image") for n in nodes]),
        "Cluster.kernel": _distinct([n.get("kernel_version") for n in nodes]),
        "Cluster.node.image": _distinct(images),
    }
