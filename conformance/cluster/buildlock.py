"""Cross-process lock around a cached build, so two runs (two terminals, parallel CI jobs on
one machine) never build into the same directory at once; the second waits, then reuses."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from filelock import FileLock

from conformance import docker_client
from conformance.cluster.versions import cache_root


@contextlib.contextmanager
def build_lock(name: str) -> Iterator[None]:
    path = cache_root() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path):
        yield


def build_once(ref: str, lock: str, build: Callable[[], str]) -> str:
    """`ref` if the image exists, else `build()` under `lock`, unless another process built
    it while this one waited."""
    if docker_client.image_exists(ref):
        return ref
    with build_lock(lock):
        if docker_client.image_exists(ref):
            return ref
        return build()
