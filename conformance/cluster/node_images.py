"""The image each kind node runs, for the report: the reference its container was created
from (what `kind create cluster --image` was given: the suite's own node image, built here,
or kindest/node) and the Docker image ID and registry digests of what actually runs, read
from the node containers, so a reused cluster is described as well as a new one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance import docker_client
from conformance.images.nodeimage import NODE_REPOSITORY


def node_image(container: Mapping[str, Any], image: Mapping[str, Any]) -> dict[str, Any]:
    """`{"ref", "image_id", "repo_digests", "built_here"}` from a node container's and its
    image's Docker inspect documents (`image` empty when the image is gone)."""
    ref = str((container.get("Config") or {}).get("Image") or "")
    return {
        "ref": ref or None,
        "image_id": container.get("Image") or None,
        # A locally built image has none: its image ID is then its only digest.
        "repo_digests": sorted(image.get("RepoDigests") or ()),
        "built_here": ref.startswith(f"{NODE_REPOSITORY}:"),
    }


def read_node_images(node_containers: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """node -> node_image of its container. Docker errors are raised: the caller decides."""
    from docker.errors import ImageNotFound

    client = docker_client.client()
    found: dict[str, dict[str, Any]] = {}
    for node, name in sorted(node_containers.items()):
        container = client.containers.get(name).attrs
        try:
            image = client.images.get(container.get("Image") or "").attrs
        except ImageNotFound:  # removed since the node started (its layers stay in use)
            image = {}
        found[node] = node_image(container, image)
    return found
