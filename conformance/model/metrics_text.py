"""Prometheus text exposition, narrowed before parsing: a component's whole /metrics page is
large, and a line of a family the suite never reads must not stop the parse of those it does."""

from __future__ import annotations

from collections.abc import Iterable


def only_families(text: str, families: Iterable[str]) -> str:
    """The lines of `text` (samples, HELP and TYPE) that belong to `families`; a histogram's
    `_bucket`/`_sum`/`_count` samples belong to its family."""
    wanted = tuple(families)
    kept = []
    for line in text.splitlines():
        if line.startswith("#"):
            parts = line.split(maxsplit=3)
            name = parts[2] if len(parts) > 2 else ""
        else:
            name = line.split("{", 1)[0].split(" ", 1)[0]
        if any(name == f or name.startswith(f + "_") for f in wanted):
            kept.append(line)
    return "\n".join(kept) + "\n"
