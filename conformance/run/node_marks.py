"""Per-node marks in the lease book: "no kubelet restart on this node before T".

A test that leaves a node in a state that a kubelet restart would break for a while (DRA-EXT-006:
the kubelet's grace period for a stopped device plugin) records a mark instead of holding its
lease until the clock runs out. Only a test that restarts a kubelet (DRA-DRAIN-005) waits for
the mark of its node. Marks live in the lease book (in the cluster, shared by every run), so
the next run against the cluster respects them too; an expired mark is gone on the next read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from conformance.run.lease_book import BookState, LeaseBook


@dataclass(frozen=True)
class NoKubeletRestart:
    node: str
    until: float  # time.time() after which a kubelet restart is safe again
    why: str


def mark_no_kubelet_restart(book: LeaseBook, node: str, until: float, why: str) -> None:
    """Record that `node`'s kubelet must not restart before `until` (the later mark wins)."""

    def mark(state: BookState) -> None:
        current = state.marks.get(node)
        if current is None or float(current["until"]) < until:
            state.marks[node] = {"until": until, "why": why}

    book.update(mark)


def _mark(state: BookState, node: str) -> NoKubeletRestart | None:
    mark = state.marks.get(node) if node in state.marked else None
    return None if mark is None else NoKubeletRestart(node, float(mark["until"]), mark["why"])


def no_kubelet_restart(book: LeaseBook, node: str) -> NoKubeletRestart | None:
    """The node's mark while it lasts, else None."""
    return book.update(lambda state: _mark(state, node))


def marked_nodes(book: LeaseBook) -> set[str]:
    """The nodes with a live mark."""
    return set(book.update(lambda state: state.marked))


def active_marks(book: LeaseBook) -> list[NoKubeletRestart]:
    def marks(state: BookState) -> list[NoKubeletRestart]:
        return [m for n in sorted(state.marked) if (m := _mark(state, n)) is not None]

    return book.update(marks)


def wait_until_kubelet_restart_allowed(
    book: LeaseBook,
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
