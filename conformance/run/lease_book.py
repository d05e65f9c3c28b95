"""Where the device lease book is kept: the storage behind the broker.

A book is read, changed and written back as one transaction (`LeaseBook.update`); the change
may run more than once (a book with optimistic concurrency retries it on a conflict), so it
only touches the state it is given. Entries of holders that died are dropped on every read, so
a killed worker does not wedge the run; grants and releases go to the journal in the same
transaction, so the journal's order is the book's.

`FileLeaseBook` keeps it in a directory shared by every process of every run on this machine
(one per cluster), under a file lock.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from filelock import FileLock

from conformance.run.lease_types import BookEntry, DeviceNeed, Scope
from conformance.run.node_marks import LOCK_FILE, marked_nodes_unlocked

log = logging.getLogger("conformance.run.lease")

T = TypeVar("T")

STATE_FILE = "leases.json"
JOURNAL_FILE = "journal.jsonl"
JOURNAL_MAX_BYTES = 4 << 20  # then it starts again; the one before is kept as journal.jsonl.1


@dataclass
class BookState:
    """The book as one transaction sees it."""

    next_ticket: int = 1
    entries: dict[int, BookEntry] = field(default_factory=dict)
    marked: frozenset[str] = frozenset()  # nodes with a live no-kubelet-restart mark
    journal: list[dict[str, Any]] = field(default_factory=list)  # appended on commit

    def add(self, entry: BookEntry) -> int:
        ticket = self.next_ticket
        self.next_ticket += 1
        self.entries[ticket] = entry
        return ticket


class LeaseBook(Protocol):
    """Storage of the lease book, shared by every process that leases the cluster's devices."""

    @property
    def location(self) -> Path | None:
        """The directory node marks and live runs are kept in (None: not on this machine)."""

    @property
    def owner(self) -> str:
        """Who this process's entries belong to, as the book checks liveness ("": by pid)."""

    def update(self, change: Callable[[BookState], T]) -> T:
        """Read the state (live holders only), apply `change`, write it back atomically if it
        changed, with the journal lines it added; returns what `change` returned."""


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
    if data.get("exclusive"):
        scope = Scope.EXCLUSIVE
    else:  # books written before scopes: from their fields
        scope = Scope(data.get("scope") or ("whole" if data.get("candidates") else "cluster"))
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
    return {"next_ticket": state.next_ticket, "entries": entries}


def state_from_json(data: dict[str, Any]) -> BookState:
    entries = {int(t): entry_from_json(e) for t, e in data.get("entries", {}).items()}
    return BookState(next_ticket=int(data.get("next_ticket", 1)), entries=entries)


def drop_entries(state: BookState, dead: Callable[[BookEntry], bool]) -> None:
    for ticket, entry in list(state.entries.items()):
        if dead(entry):
            log.warning("dropping device lease of dead process %s (%s)", entry.pid, entry.holder)
            del state.entries[ticket]


# --- on this machine's disk -------------------------------------------------------------------


class FileLeaseBook:
    """The book in a directory: `leases.json`, `journal.jsonl`, node marks beside them, all
    under one lock file. Holders are processes of this host: a dead pid is a dead holder (a
    holder on another host sharing the directory cannot be checked and counts as alive)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.state_file = self.directory / STATE_FILE
        self.journal_file = self.directory / JOURNAL_FILE
        self.lock = FileLock(self.directory / LOCK_FILE)
        self.host = socket.gethostname()

    @property
    def location(self) -> Path:
        return self.directory

    @property
    def owner(self) -> str:
        return ""  # a holder is its pid on this host

    def update(self, change: Callable[[BookState], T]) -> T:
        with self.lock:
            try:
                raw = json.loads(self.state_file.read_text())
            except (FileNotFoundError, ValueError):
                raw = {"next_ticket": 1, "entries": {}}
            before = json.dumps(raw, sort_keys=True)
            state = state_from_json(raw)
            drop_entries(state, lambda e: e.host == self.host and not pid_alive(e.pid))
            state.marked = frozenset(marked_nodes_unlocked(self.directory))
            result = change(state)
            after = state_to_json(state)
            if json.dumps(after, sort_keys=True) != before:
                tmp = self.state_file.with_suffix(f".tmp.{os.getpid()}")
                tmp.write_text(json.dumps(after, indent=1, sort_keys=True))
                os.replace(tmp, self.state_file)
            self._append_journal(state.journal)
            return result

    def _append_journal(self, lines: list[dict[str, Any]]) -> None:
        """A journal that cannot be written is only a missing timeline, never a failed lease."""
        if not lines:
            return
        try:
            if self.journal_file.is_file() and self.journal_file.stat().st_size > JOURNAL_MAX_BYTES:
                os.replace(self.journal_file, self.journal_file.with_suffix(".jsonl.1"))
            with open(self.journal_file, "a") as journal:
                journal.writelines(json.dumps(line) + "\n" for line in lines)
        except OSError as exc:
            log.debug("lease journal %s: %s", self.journal_file, exc)
