"""Cross-process device lease: parallel tests never ask the cluster for more devices than it has.

Devices are cluster-wide and scarce; xdist workers are separate processes. Each test declares
what it needs (`@pytest.mark.dra_devices(kind, count)`, `dra_node_exclusive`); before it starts,
it takes a lease from the cluster's lease book, which every process of every run against the
cluster shares. Three parts:

- `run.lease_policy`: the admission rules and fairness (scopes, conflicts, guards, whole nodes,
  reservations, backfill), pure;
- `run.lease_book`: what the book holds and the interface of its storage, kept in the
  cluster under test (`run.cluster_lease_book`), where holders renew and a dead one expires;
- this module, the broker: a test's request goes into the book, the broker polls until the
  policy grants it (or the deadline passes: the error names who holds what), journals grants
  and releases, and releases.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from conformance.errors import ConformanceError
from conformance.run.lease_book import BookState, LeaseBook, entry_to_json, pid_alive
from conformance.run.lease_policy import EXCLUSIVE_PATIENCE_S, AdmissionPolicy, needs_text
from conformance.run.lease_types import (
    ALL,
    HELD,
    BookEntry,
    DeviceNeed,
    LeaseError,
    LeaseRequest,
    Scope,
)

__all__ = [
    "ALL",
    "DeviceLease",
    "DeviceLeaseBroker",
    "DeviceNeed",
    "LeaseError",
    "LeaseRequest",
    "LeaseTimeout",
    "pid_alive",
    "reclaim",
]

log = logging.getLogger("conformance.run.lease")


class LeaseTimeout(ConformanceError):
    """Waited too long; the message names who holds what."""


@dataclass(frozen=True)
class DeviceLease:
    ticket: int
    holder: str
    needs: tuple[DeviceNeed, ...]
    exclusive: bool
    waited_s: float
    node: str | None = None  # where the test's pods go: the node leased whole, or pinned to
    book: LeaseBook | None = None  # the lease book (node marks live there too)
    whole: bool = False  # `node` is leased whole (dra_node_exclusive), not only devices on it
    # devices no other lease may be allocated while this one is held (guarded needs, whole node)
    guarded: frozenset[str] = frozenset()


class DeviceLeaseBroker:
    """One per process; all brokers of every run against the cluster share its book and
    must get the same `device_sets` (kind -> ids of devices it may be allocated) and
    `device_nodes` (device id -> its node, None for a network-attached device)."""

    def __init__(
        self,
        book: LeaseBook,
        device_sets: Mapping[str, frozenset[str]],
        *,
        device_nodes: Mapping[str, str | None] | None = None,
        poll_interval: float = 0.5,
        report_every: float = 30.0,
    ) -> None:
        self.book = book
        # Read when the broker is made, so a test that shortens it reaches the forked workers.
        self.policy = AdmissionPolicy(
            dict(device_sets), dict(device_nodes or {}), exclusive_patience_s=EXCLUSIVE_PATIENCE_S
        )
        self.nodes = self.policy.nodes
        self.poll_interval = poll_interval
        self.report_every = report_every
        self.host = socket.gethostname()

    def pin_candidates(self, needs: Sequence[DeviceNeed]) -> list[str]:
        """The nodes that publish enough devices for every need (ALL: every device of the kind)."""
        return self.policy.pin_candidates(needs)

    def acquire(self, request: LeaseRequest, *, timeout: float) -> DeviceLease:
        """Wait until the request can be granted; raises LeaseError at once for one that never
        can be, and LeaseTimeout naming the holders after `timeout` seconds."""
        start = time.monotonic()
        entry = replace(
            self.policy.entry_for(request, since=time.time()),
            pid=os.getpid(),
            host=self.host,
            owner=self.book.owner,
        )
        ticket = self.book.update(lambda state: state.add(replace(entry)))
        try:
            return self._wait(request, entry, ticket, start, start + timeout)
        except BaseException:
            self.book.update(lambda state: state.entries.pop(ticket, None))
            raise

    def _wait(
        self, request: LeaseRequest, entry: BookEntry, ticket: int, start: float, deadline: float
    ) -> DeviceLease:
        """Poll the book until the policy grants `ticket`: a clear loop, as its progress
        report and its error need what the last look found."""
        last_report: float | None = None
        while True:
            found = self.book.update(lambda state: self._try_grant(state, request, ticket, start))
            if isinstance(found, DeviceLease):
                if last_report is not None:
                    log.info(
                        "%s: got devices %s after %.0fs",
                        request.holder,
                        needs_text(entry.needs),
                        found.waited_s,
                    )
                return found
            now = time.monotonic()
            if now > deadline:
                raise LeaseTimeout(
                    f"{request.holder}: gave up after {now - start:.0f}s waiting for devices "
                    f"{needs_text(entry.needs)}{scope_text(entry)}; {found}",
                    "raise timeouts.lease in the profile or --dra-timeout-scale, or look for "
                    "a test that holds its lease too long",
                )
            if last_report is None or now - last_report >= self.report_every:
                log.info(
                    "%s: waiting for devices %s; %s", request.holder, needs_text(entry.needs), found
                )
                last_report = now
            time.sleep(self.poll_interval)

    def _try_grant(
        self, state: BookState, request: LeaseRequest, ticket: int, start: float
    ) -> DeviceLease | str:
        """In one transaction: grant `ticket` if the policy allows (journaled), else record its
        reservation; the lease, or who holds and waits ahead."""
        decision = self.policy.decide(state.entries, ticket, now=time.time(), marked=state.marked)
        me = state.entries[ticket]
        if not decision.grant:
            if decision.reserve is not None:
                me.reserved = decision.reserve
            return describe_others(state, ticket, time.time())
        me.state, me.since, me.node = HELD, time.time(), decision.node
        waited = time.monotonic() - start
        state.journal.append(
            journal_line(
                "grant",
                me,
                ticket=ticket,
                node=me.node,
                waited_s=round(waited, 3),
                needs=entry_to_json(me)["needs"],
            )
        )
        return DeviceLease(
            ticket,
            request.holder,
            request.needs,
            request.exclusive,
            waited,
            node=me.node,
            book=self.book,
            whole=me.scope is Scope.WHOLE,
            guarded=self.policy.guarded_devices(me),
        )

    def release(self, lease: DeviceLease) -> None:
        def drop(state: BookState) -> None:
            entry = state.entries.pop(lease.ticket, None)
            if entry is not None:
                state.journal.append(
                    journal_line("release", entry, ticket=lease.ticket, node=lease.node)
                )

        self.book.update(drop)

    @contextlib.contextmanager
    def lease(self, request: LeaseRequest, *, timeout: float) -> Iterator[DeviceLease]:
        granted = self.acquire(request, timeout=timeout)
        try:
            yield granted
        finally:
            self.release(granted)

    def holders(self) -> list[dict[str, Any]]:
        """Every entry of the book (waiting or held), as it is stored, with its ticket."""
        return self.book.update(
            lambda state: [dict(entry_to_json(e), ticket=t) for t, e in state.entries.items()]
        )


def reclaim(book: LeaseBook, owner: str) -> list[str]:
    """Drop every entry of `owner`, a process known dead before its heartbeat expires (a
    worker its controller saw die); journaled as releases. The holders dropped."""

    def drop(state: BookState) -> list[str]:
        gone = [t for t, e in state.entries.items() if e.owner == owner]
        for ticket in gone:
            entry = state.entries.pop(ticket)
            state.journal.append(journal_line("release", entry, ticket=ticket, node=entry.node))
        return [e["holder"] for e in state.journal]

    return book.update(drop)


def journal_line(event: str, entry: BookEntry, **fields: Any) -> dict[str, Any]:
    """One line of the journal (bench/timeline.py reads where the run's time went; a check of
    two runs sharing a cluster replays it): when, what, whose, and in which process."""
    line = {"t": round(time.time(), 3), "event": event, "holder": entry.holder}
    line.update(scope=str(entry.scope), owner=entry.owner, **fields)
    return line


def describe_others(state: BookState, ticket: int, now: float) -> str:
    held, waiting = [], []
    for t, e in sorted(state.entries.items()):
        if t == ticket:
            continue
        where = f"pid {e.pid} on {e.host}"
        text = f"{e.holder} ({where}, {needs_text(e.needs)}{scope_text(e)}, {now - e.since:.0f}s)"
        if e.state == HELD:
            held.append(text)
        elif t < ticket:
            waiting.append(text)
    parts = [f"held by: {'; '.join(held) if held else 'nobody'}"]
    if waiting:
        parts.append(f"waiting ahead: {'; '.join(waiting)}")
    return ", ".join(parts)


def scope_text(entry: BookEntry) -> str:
    if entry.exclusive:
        return " (exclusive)"
    pinned = entry.scope is Scope.NODE
    if entry.node:
        return f" (on node {entry.node})" if pinned else f" (node {entry.node} whole)"
    if entry.candidates:
        one = "on one node of" if pinned else "a whole node of"
        return f" ({one} {', '.join(entry.candidates)})"
    return ""
