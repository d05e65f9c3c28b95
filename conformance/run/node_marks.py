"""Per-node marks in the lease book: "no kubelet restart on this node before T".

A test that leaves a node in a state that a kubelet restart would break for a while (DRA-EXT-006:
the kubelet's grace period for a stopped device plugin) records a mark instead of holding its
lease until the clock runs out. Only a test that restarts a kubelet (DRA-DRAIN-005) waits for
the mark of its node. Marks live beside the leases (one book per cluster, shared by every
run), so the next run against the cluster respects them too.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

MARKS_FILE = "node_marks.json"
LOCK_FILE = "leases.lock"  # the lease book's lock: one lock for the whole book


@dataclass(frozen=True)
class NoKubeletRestart:
    node: str
    until: float  # time.time() after which a kubelet restart is safe again
    why: str


@contextlib.contextmanager
def _locked_marks(book: Path) -> Iterator[dict[str, Any]]:
    book.mkdir(parents=True, exist_ok=True)
    path = book / MARKS_FILE
    with FileLock(book / LOCK_FILE):
        try:
            marks = json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            marks = {}
        before = json.dumps(marks, sort_keys=True)
        marks = _live(marks)  # expired: gone
        yield marks
        if json.dumps(marks, sort_keys=True) != before:
            tmp = path.with_suffix(f".tmp.{os.getpid()}")
            tmp.write_text(json.dumps(marks, indent=1, sort_keys=True))
            os.replace(tmp, path)


def _live(marks: dict[str, Any]) -> dict[str, Any]:
    now = time.time()
    return {node: mark for node, mark in marks.items() if mark.get("until", 0) > now}


def marked_nodes_unlocked(book: Path) -> set[str]:
    """Nodes with a live mark, read without the book's lock, for a caller that holds it
    already (the lease broker): the file is only ever replaced whole."""
    try:
        return set(_live(json.loads((book / MARKS_FILE).read_text())))
    except (FileNotFoundError, ValueError):
        return set()


def mark_no_kubelet_restart(book: Path, node: str, until: float, why: str) -> None:
    """Record that `node`'s kubelet must not restart before `until` (the later mark wins)."""
    with _locked_marks(book) as marks:
        current = marks.get(node)
        if current is None or current["until"] < until:
            marks[node] = {"until": until, "why": why}


def no_kubelet_restart(book: Path, node: str) -> NoKubeletRestart | None:
    """The node's mark while it lasts, else None."""
    with _locked_marks(book) as marks:
        mark = marks.get(node)
    return None if mark is None else NoKubeletRestart(node, mark["until"], mark["why"])


def active_marks(book: Path) -> list[NoKubeletRestart]:
    with _locked_marks(book) as marks:
        return [NoKubeletRestart(n, m["until"], m["why"]) for n, m in sorted(marks.items())]


def wait_until_kubelet_restart_allowed(
    book: Path,
    node: str,
    *,
    timeout: float,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Block until `node` has no mark; returns the seconds waited. A mark longer than
    `timeout` is an error naming who set it and why."""
    waited = 0.0
    while (mark := no_kubelet_restart(book, node)) is not None:
        left = mark.until - time.time()
        if waited + left > timeout:
            raise TimeoutError(
                f"the kubelet on {node} must not restart for another {left:.0f}s ({mark.why}), "
                f"more than the {timeout - waited:.0f}s left to wait"
            )
        step = min(max(left, 0.05), 5.0)
        sleep(step)
        waited += step
    return waited
