"""An image built once: reused when present, else built under its cache lock, unless another
process built it while this one waited."""

from __future__ import annotations

from collections.abc import Callable

from conformance import docker_client
from conformance.cache import build_lock


def build_once(ref: str, lock: str, build: Callable[[], str]) -> str:
    """`ref` if the image exists, else `build()` under `lock`, unless another process built
    it while this one waited."""
    if docker_client.image_exists(ref):
        return ref
    with build_lock(lock):
        if docker_client.image_exists(ref):
            return ref
        return build()
