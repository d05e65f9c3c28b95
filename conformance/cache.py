"""The shared build cache: where it lives, how its entries are keyed, and the lock that keeps
two processes (two terminals, parallel CI jobs, pytest workers) from building into the same
entry at once: the second waits, then reuses what the first built."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock

# Bump when the way an artefact is assembled changes, so old cache entries are not reused.
BUILDER_REVISION = "1"


CACHE_ENV = "DRA_CONFORMANCE_CACHE"


def cache_root() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dra-conformance"
    )
    return Path(base)


def digest(*parts: object) -> str:
    text = json.dumps([BUILDER_REVISION, *parts], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@contextlib.contextmanager
def build_lock(name: str) -> Iterator[None]:
    path = cache_root() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path):
        yield
