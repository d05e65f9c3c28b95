"""Cross-process device lease: parallel tests never ask the cluster for more devices than it has.

Devices are cluster-wide and scarce; xdist workers are separate processes. Each test declares
what it needs (`@pytest.mark.dra_devices(kind, count)`); before it starts, it takes a lease from a
JSON state file in the run directory, guarded by an fcntl lock, so every worker of the run
sees the same book.

Admission rule (safe even though the scheduler, not we, picks the devices): for every kind K,
the devices that leases of K *or of any kind overlapping K* may take must fit in K. A
`default` lease may land on a `large` device, so both count against `large`. A kind whose
device set is unknown (its CEL is beyond conformance.model.cel) overlaps everything and is therefore
leased alone. An exclusive lease is granted only when nothing else is held, and blocks others.

Node leases (`@pytest.mark.dra_node_exclusive`): a test that disrupts one node (cordon, drain,
driver restart, taints or withdrawal of that node's devices) leases a whole node from the
candidates it can use, and learns which one it got (`DeviceLease.node`). It owns every device
on that node. Its device needs (replacements on other nodes) count against the kind's devices
off that node. It conflicts with any other lease whose devices could land on its node: a
node lease on the same node, or device needs of a kind with a device there (or of unknown
set), since the scheduler, not the harness, places those pods. Node leases on different
nodes whose needs do not reach each other's node run side by side.

Fairness: a request may not overtake an earlier waiting request it conflicts with, so an
exclusive test is not starved by a stream of small ones; unrelated kinds still backfill.
Holders whose process died are dropped, so a killed worker does not wedge the run.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.errors import ConformanceError
from conformance.run.node_marks import marked_nodes_unlocked

log = logging.getLogger("conformance.run.lease")

ALL = "all"  # count meaning "every device of the kind"


class LeaseError(ConformanceError):
    """A lease can never be granted (unknown kind, more devices than the cluster has)."""


class LeaseTimeout(ConformanceError):
    """Waited too long; the message names who holds what."""


@dataclass(frozen=True)
class DeviceNeed:
    kind: str
    count: int | str = 1  # an int >= 1, or ALL

    def __str__(self) -> str:
        return f"{self.kind}×{self.count}"


@dataclass(frozen=True)
class DeviceLease:
    ticket: int
    holder: str
    needs: tuple[DeviceNeed, ...]
    exclusive: bool
    waited_s: float
    node: str | None = None  # the node leased whole (dra_node_exclusive), pods go there
    book: Path | None = None  # the lease book's directory (node marks live there too)


def cluster_lease_dir(cluster_name: str, context: str | None = None) -> Path:
    """The lease book of one cluster, shared by every run (and process) that targets it."""
    from conformance.cluster.versions import cache_root
    from conformance.model.naming import file_safe

    return cache_root() / "leases" / file_safe(f"{cluster_name}-{context or 'default'}")


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists (possibly owned by another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class DeviceLeaseBroker:
    """One per process; all brokers of a run share `state_dir` and must get the same
    `device_sets` (kind -> ids of devices it may be allocated, or None if unknown)."""

    def __init__(
        self,
        state_dir: Path,
        device_sets: Mapping[str, frozenset[str] | None],
        *,
        device_nodes: Mapping[str, str | None] | None = None,
        poll_interval: float = 0.5,
        report_every: float = 30.0,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.state_file = self.state_dir / "leases.json"
        self.lock_file = self.state_dir / "leases.lock"
        self.device_sets = dict(device_sets)
        # device id -> the node it is published for (None: network-attached, no node)
        self.device_nodes = dict(device_nodes or {})
        self.nodes = sorted({n for n in self.device_nodes.values() if n})
        self.poll_interval = poll_interval
        self.report_every = report_every
        self.host = socket.gethostname()

    # --- the book, under the lock ------------------------------------------------------

    @contextlib.contextmanager
    def _locked_state(self) -> Iterator[dict[str, Any]]:
        with open(self.lock_file, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                try:
                    state = json.loads(self.state_file.read_text())
                except (FileNotFoundError, ValueError):
                    state = {"next_ticket": 1, "entries": {}}
                before = json.dumps(state, sort_keys=True)
                self._drop_dead(state)
                yield state
                if json.dumps(state, sort_keys=True) != before:
                    tmp = self.state_file.with_suffix(f".tmp.{os.getpid()}")
                    tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
                    os.replace(tmp, self.state_file)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _drop_dead(self, state: dict[str, Any]) -> None:
        for ticket, entry in list(state["entries"].items()):
            if entry["host"] == self.host and not pid_alive(entry["pid"]):
                log.warning(
                    "dropping device lease of dead process %s (%s)", entry["pid"], entry["holder"]
                )
                del state["entries"][ticket]

    # --- admission -------------------------------------------------------------------------

    def _size(self, kind: str) -> int | None:
        ids = self.device_sets[kind]
        return None if ids is None else len(ids)

    def _overlaps(self, a: str, b: str) -> bool:
        sa, sb = self.device_sets[a], self.device_sets[b]
        return sa is None or sb is None or a == b or bool(sa & sb)

    def _count(self, need: Mapping[str, Any]) -> int:
        size = self._size(need["kind"])
        return (size or 0) if need["count"] == ALL else int(need["count"])

    def _kind_nodes(self, kind: str) -> set[str]:
        """The nodes a device of `kind` may be on (every node when its set is unknown)."""
        ids = self.device_sets[kind]
        if ids is None:
            return set(self.nodes)
        return {n for d in ids if (n := self.device_nodes.get(d))}

    def _node_devices(self, node: str) -> set[str]:
        return {d for d, n in self.device_nodes.items() if n == node}

    @staticmethod
    def _nodes_of(entry: Mapping[str, Any]) -> set[str]:
        """The nodes a node lease holds (granted) or may get (waiting); empty for the rest."""
        if entry.get("node"):
            return {entry["node"]}
        return set(entry.get("candidates") or ())

    def _reaches(self, x: Mapping[str, Any], nodes: set[str]) -> bool:
        """Could a pod of `x`'s device needs land on one of `nodes`?"""
        return any(self._kind_nodes(n["kind"]) & nodes for n in x["needs"])

    def _node_conflict(self, x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
        xn, yn = self._nodes_of(x), self._nodes_of(y)
        return bool(xn & yn) or self._reaches(x, yn) or self._reaches(y, xn)

    def _conflicts(self, x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
        if x["exclusive"] or y["exclusive"] or self._node_conflict(x, y):
            return True
        return any(self._overlaps(a["kind"], b["kind"]) for a in x["needs"] for b in y["needs"])

    def _fits(self, entries: Sequence[Mapping[str, Any]]) -> bool:
        """Can these leases (node leases with their node set) be held at once?"""
        if len(entries) > 1 and any(e["exclusive"] for e in entries):
            return False
        for i, x in enumerate(entries):
            if any(self._node_conflict(x, y) for y in entries[i + 1 :]):
                return False
        leased_nodes = [e["node"] for e in entries if e.get("node")]
        needs = [n for e in entries for n in e["needs"]]
        kinds = {n["kind"] for n in needs}
        for kind in kinds:
            size = self._size(kind)
            if size is None:
                # Unknown set: it may share devices with anything, so it must be alone.
                if len(entries) > 1:
                    return False
                continue
            used = sum(self._count(n) for n in needs if self._overlaps(n["kind"], kind))
            ids = self.device_sets[kind] or frozenset()
            # A leased node's devices are taken whole: needs must fit in what is left.
            used += sum(len(ids & self._node_devices(node)) for node in leased_nodes)
            if used > size:
                return False
        return True

    def _grantable(self, state: Mapping[str, Any], ticket: str) -> str | None | bool:
        """False, or what to grant: the node for a node lease (in candidate order), else None."""
        entries = state["entries"]
        me = entries[ticket]
        earlier_waiting = [
            e for t, e in entries.items() if e["state"] == "waiting" and int(t) < int(ticket)
        ]
        if any(self._conflicts(me, e) for e in earlier_waiting):
            return False
        held = [e for e in entries.values() if e["state"] == "held"]
        # Nodes marked "no kubelet restart" last, decided now rather than when the test asked:
        # a mark set meanwhile (DRA-EXT-006) must not hand its node to a test that would
        # then wait out the mark while holding the node (DRA-DRAIN-005).
        marked = marked_nodes_unlocked(self.state_dir)
        candidates = sorted(me.get("candidates") or [], key=lambda n: n in marked)
        for node in candidates or [None]:
            if self._fits([*held, dict(me, node=node)]):
                return node
        return False

    def _validate_nodes(self, needs: Sequence[DeviceNeed], candidates: Sequence[str]) -> None:
        unknown = [n for n in candidates if n not in self.nodes]
        if unknown:
            raise LeaseError(
                f"node lease: {', '.join(unknown)} publish(es) no device",
                f"pick among the nodes with devices: {', '.join(self.nodes) or 'none'}",
            )
        entry = {"needs": [{"kind": n.kind, "count": n.count} for n in needs], "exclusive": False}
        if not any(self._fits([dict(entry, node=node)]) for node in candidates):
            raise LeaseError(
                f"no node of {', '.join(candidates) or 'none'} can be leased whole while "
                f"{_needs(entry)} more fit on the other nodes",
                "add devices (or nodes) to the cluster",
            )

    def _validate(self, needs: Sequence[DeviceNeed]) -> None:
        for need in needs:
            if need.kind not in self.device_sets:
                known = ", ".join(sorted(self.device_sets))
                raise LeaseError(f"unknown device kind {need.kind!r}", f"use one of: {known}")
            if need.count != ALL and (not isinstance(need.count, int) or need.count < 1):
                raise LeaseError(
                    f"device count for {need.kind!r} must be >= 1 or 'all', got {need.count!r}"
                )
            size = self._size(need.kind)
            wanted = size if need.count == ALL else need.count
            if size is not None and (size == 0 or wanted > size):
                raise LeaseError(
                    f"the test needs {wanted} device(s) of kind {need.kind!r}, and the cluster "
                    f"publishes {size} matching it",
                    "add devices (or nodes) to the cluster, or fix the profile's selector",
                )

    # --- public -------------------------------------------------------------------------

    def acquire(
        self,
        holder: str,
        needs: Sequence[DeviceNeed],
        *,
        exclusive: bool = False,
        nodes: Sequence[str] | None = None,
        timeout: float,
    ) -> DeviceLease:
        """Wait until the devices can be leased; raises LeaseTimeout naming the holders.

        `nodes`: lease one of these nodes whole (a node lease), in this order of preference."""
        self._validate(needs)
        if nodes is not None:
            if exclusive:
                raise LeaseError("a lease is cluster-wide exclusive or of one node, not both")
            self._validate_nodes(needs, nodes)
        start = time.monotonic()
        entry = {
            "holder": holder,
            "pid": os.getpid(),
            "host": self.host,
            "needs": [{"kind": n.kind, "count": n.count} for n in needs],
            "exclusive": exclusive,
            "candidates": list(nodes or ()),
            "node": None,
            "state": "waiting",
            "since": time.time(),
        }
        with self._locked_state() as state:
            ticket = str(state["next_ticket"])
            state["next_ticket"] += 1
            state["entries"][ticket] = entry
        last_report = None
        try:
            while True:
                with self._locked_state() as state:
                    granted = self._grantable(state, ticket)
                    if granted is not False:
                        node = granted if isinstance(granted, str) else None
                        state["entries"][ticket].update(state="held", since=time.time(), node=node)
                        waited = time.monotonic() - start
                        if last_report is not None:
                            log.info(
                                "%s: got devices %s after %.0fs", holder, _needs(entry), waited
                            )
                        return DeviceLease(
                            int(ticket),
                            holder,
                            tuple(needs),
                            exclusive,
                            waited,
                            node=node,
                            book=self.state_dir,
                        )
                    others = self._describe_others(state, ticket)
                now = time.monotonic()
                if now - start > timeout:
                    raise LeaseTimeout(
                        f"{holder}: gave up after {now - start:.0f}s waiting for devices "
                        f"{_needs(entry)}{_scope(entry)}; {others}",
                        "raise timeouts.lease in the profile or --dra-timeout-scale, or look for "
                        "a test that holds its lease too long",
                    )
                if last_report is None or now - last_report >= self.report_every:
                    log.info("%s: waiting for devices %s; %s", holder, _needs(entry), others)
                    last_report = now
                time.sleep(self.poll_interval)
        except BaseException:
            with self._locked_state() as state:
                state["entries"].pop(ticket, None)
            raise

    def release(self, lease: DeviceLease) -> None:
        with self._locked_state() as state:
            state["entries"].pop(str(lease.ticket), None)

    @contextlib.contextmanager
    def lease(
        self,
        holder: str,
        needs: Sequence[DeviceNeed],
        *,
        exclusive: bool = False,
        nodes: Sequence[str] | None = None,
        timeout: float,
    ) -> Iterator[DeviceLease]:
        granted = self.acquire(holder, needs, exclusive=exclusive, nodes=nodes, timeout=timeout)
        try:
            yield granted
        finally:
            self.release(granted)

    def holders(self) -> list[dict[str, Any]]:
        with self._locked_state() as state:
            return [dict(e, ticket=int(t)) for t, e in state["entries"].items()]

    def _describe_others(self, state: Mapping[str, Any], ticket: str) -> str:
        now = time.time()
        held, waiting = [], []
        for t, e in sorted(state["entries"].items(), key=lambda kv: int(kv[0])):
            if t == ticket:
                continue
            text = (
                f"{e['holder']} (pid {e['pid']}, {_needs(e)}{_scope(e)}, {now - e['since']:.0f}s)"
            )
            if e["state"] == "held":
                held.append(text)
            elif int(t) < int(ticket):
                waiting.append(text)
        parts = [f"held by: {'; '.join(held) if held else 'nobody'}"]
        if waiting:
            parts.append(f"waiting ahead: {'; '.join(waiting)}")
        return ", ".join(parts)


def _needs(entry: Mapping[str, Any]) -> str:
    return ", ".join(f"{n['kind']}×{n['count']}" for n in entry["needs"]) or "no devices"


def _scope(entry: Mapping[str, Any]) -> str:
    if entry.get("exclusive"):
        return " (exclusive)"
    if entry.get("node"):
        return f" (node {entry['node']} whole)"
    if entry.get("candidates"):
        return f" (a whole node of {', '.join(entry['candidates'])})"
    return ""
