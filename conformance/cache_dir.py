"""Where dra-conformance keeps what it builds and measures on this machine (node images, Go
tools, test durations): `DRA_CONFORMANCE_CACHE`, else `$XDG_CACHE_HOME/dra-conformance`. Below
every layer that needs it; nothing shared between runs of several machines lives here."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "DRA_CONFORMANCE_CACHE"


def cache_root() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dra-conformance"
    )
    return Path(base)
