"""A kind node's image as the report names it, from Docker's inspect documents: the reference
kind was given, the image ID that runs, its registry digests, and whether the suite built it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from conformance.cluster import node_images
from conformance.images.nodeimage import NODE_REPOSITORY

IMAGE_ID = "sha256:" + "ab" * 32
BUILT = f"{NODE_REPOSITORY}:v1.37.2-0123456789ab"


def test_a_node_image_built_here_is_named_by_its_image_id() -> None:
    container = {"Config": {"Image": BUILT}, "Image": IMAGE_ID}
    assert node_images.node_image(container, {"Id": IMAGE_ID, "RepoDigests": []}) == {
        "ref": BUILT,
        "image_id": IMAGE_ID,
        "repo_digests": [],
        "built_here": True,
    }


def test_a_pulled_node_image_keeps_its_registry_digest() -> None:
    digest = "kindest/node@sha256:" + "cd" * 32
    container = {"Config": {"Image": "kindest/node:v1.37.2"}, "Image": IMAGE_ID}
    found = node_images.node_image(container, {"RepoDigests": [digest]})
    assert (found["repo_digests"], found["built_here"]) == ([digest], False)


def test_an_image_removed_since_the_node_started(monkeypatch: pytest.MonkeyPatch) -> None:
    from docker.errors import ImageNotFound

    container = SimpleNamespace(attrs={"Config": {"Image": BUILT}, "Image": IMAGE_ID})

    def get_image(ref: str) -> Any:
        raise ImageNotFound(ref)

    client = SimpleNamespace(
        containers=SimpleNamespace(get=lambda name: container),
        images=SimpleNamespace(get=get_image),
    )
    monkeypatch.setattr(node_images.docker_client, "client", lambda: client)
    found = node_images.read_node_images({"w1": "kind-w1"})
    assert found == {
        "w1": {"ref": BUILT, "image_id": IMAGE_ID, "repo_digests": [], "built_here": True}
    }
