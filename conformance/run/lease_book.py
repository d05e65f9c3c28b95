"""What the device lease book holds, and the interface of its storage.

A book is read, changed and written back as one transaction (`LeaseBook.update`); the change
may run more than once (a book with optimistic concurrency retries it on a conflict), so it
only touches the state it is given. Entries of holders that stopped renewing are dropped on
every read, so a killed worker or runner does not wedge anyone. Besides the leases the book
keeps the node marks (`run.node_marks`) and the runs registered as alive (`run.live_runs`),
all under the same transaction; grants and releases go to its journal.

The book is kept in the cluster under test (`run.cluster_lease_book`); anything else that
implements `LeaseBook` (a test double) holds the same state.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from conformance.run.lease_types import BookEntry, DeviceNeed, Scope

log = logging.getLogger("conformance.run.lease")

T = TypeVar("T")


def _always_alive(owner: str) -> bool:
    return True


@dataclass
class BookState:
    """The book as one transaction sees it. `alive(owner)`: does that owner still renew?"""

    next_ticket: int = 1
    entries: dict[int, BookEntry] = field(default_factory=dict)
    marks: dict[str, dict[str, Any]] = field(default_factory=dict)  # node -> {until, why}
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # run id -> {owner, ...}
    journal: list[dict[str, Any]] = field(default_factory=list)  # appended on commit
    alive: Callable[[str], bool] = _always_alive
    dropped: list[BookEntry] = field(default_factory=list)  # expired on this read

    def add(self, entry: BookEntry) -> int:
        ticket = self.next_ticket
        self.next_ticket += 1
        self.entries[ticket] = entry
        return ticket

    @property
    def marked(self) -> frozenset[str]:
        """Nodes with a live no-kubelet-restart mark."""
        now = time.time()
        return frozenset(n for n, m in self.marks.items() if float(m.get("until", 0)) > now)


class LeaseBook(Protocol):
    """Storage of the lease book, shared by every process that leases the cluster's devices."""

    @property
    def owner(self) -> str:
        """Who this process's entries belong to (it renews them while it lives)."""

    def update(self, change: Callable[[BookState], T]) -> T:
        """Read the state (live holders only), apply `change`, write it back atomically if it
        changed, with the journal lines it added; returns what `change` returned."""

    def close(self) -> None:
        """This process is done with the book: its entries need not wait to expire."""


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists (possibly owned by another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- the book as JSON (the same in every storage) --------------------------------------------


def entry_to_json(entry: BookEntry) -> dict[str, Any]:
    out: dict[str, Any] = {
        "holder": entry.holder,
        "pid": entry.pid,
        "host": entry.host,
        "needs": [{"kind": n.kind, "count": n.count, "guard": n.guard} for n in entry.needs],
        "exclusive": entry.exclusive,
        "scope": str(entry.scope),
        "candidates": list(entry.candidates),
        "avoid_marked": entry.avoid_marked,
        "expected_s": entry.expected_s,
        "node": entry.node,
        "state": entry.state,
        "since": entry.since,
    }
    if entry.reserved:
        out["reserved"] = entry.reserved
    if entry.owner:
        out["owner"] = entry.owner
    return out


def entry_from_json(data: dict[str, Any]) -> BookEntry:
    scope = Scope.EXCLUSIVE if data.get("exclusive") else Scope(data.get("scope") or "cluster")
    return BookEntry(
        holder=data["holder"],
        needs=tuple(DeviceNeed(n["kind"], n["count"], bool(n.get("guard"))) for n in data["needs"]),
        scope=scope,
        candidates=tuple(data.get("candidates") or ()),
        avoid_marked=bool(data.get("avoid_marked")),
        expected_s=data.get("expected_s"),
        node=data.get("node"),
        reserved=data.get("reserved"),
        state=data["state"],
        since=float(data["since"]),
        pid=int(data.get("pid", 0)),
        host=str(data.get("host", "")),
        owner=str(data.get("owner", "")),
    )


def state_to_json(state: BookState) -> dict[str, Any]:
    entries = {str(t): entry_to_json(e) for t, e in state.entries.items()}
    out: dict[str, Any] = {"next_ticket": state.next_ticket, "entries": entries}
    if state.marks:
        out["marks"] = state.marks
    if state.runs:
        out["runs"] = state.runs
    return out


def state_from_json(data: dict[str, Any]) -> BookState:
    entries = {int(t): entry_from_json(e) for t, e in data.get("entries", {}).items()}
    now = time.time()
    marks = {  # an expired mark is gone
        n: dict(m) for n, m in (data.get("marks") or {}).items() if float(m.get("until", 0)) > now
    }
    return BookState(
        next_ticket=int(data.get("next_ticket", 1)),
        entries=entries,
        marks=marks,
        runs={r: dict(v) for r, v in (data.get("runs") or {}).items()},
    )


def drop_dead(state: BookState) -> None:
    """Drop the entries whose owner no longer renews (kept in `state.dropped`, for cleanup)."""
    for ticket, entry in list(state.entries.items()):
        if not state.alive(entry.owner):
            log.warning(
                "dropping the device lease of %s: its holder %s stopped renewing",
                entry.holder,
                entry.owner or f"pid {entry.pid}",
            )
            state.dropped.append(entry)
            del state.entries[ticket]
