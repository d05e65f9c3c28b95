"""Cross-process lock around a cached build, so two runs (two terminals, parallel CI jobs on
one machine) never build into the same directory at once; the second waits, then reuses."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator

from conformance.cluster.versions import cache_root


@contextlib.contextmanager
def build_lock(name: str) -> Iterator[None]:
    path = cache_root() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
