"""Cross-process device lease: parallel tests never ask the cluster for more devices than it has.

Devices are cluster-wide and scarce; xdist workers are separate processes. Each test declares
what it needs (`@pytest.mark.dra_devices(kind, count)`); before it starts, it takes a lease from a
JSON state file in the run directory, guarded by an fcntl lock, so every worker of the run
sees the same book.

Admission rule (safe even though the scheduler, not we, picks the devices): for every kind K,
the devices that leases of K *or of any kind overlapping K* may take must fit in K. A
`default` lease may land on a `large` device, so both count against `large`. Every kind's
device set is exact: its class's and its own selectors evaluated on the published devices as
the scheduler evaluates them (conformance.cel). An exclusive lease is granted only when
nothing else is held, and blocks others.

Scopes. A lease is one of:
- cluster-wide exclusive (`exclusive=True`): nothing else is held beside it;
- a whole node (`@pytest.mark.dra_node_exclusive`, `nodes=`): a test that disrupts one node
  (cordon, drain, driver restart, taints, withdrawal of its devices) owns every device there and
  learns which node it got (`DeviceLease.node`, `.whole`). Its device needs (replacements) go to
  the other nodes;
- devices on one node (`pin=True`, the default of the scenario fixture): the test's pods are
  pinned to the node it got (`DeviceLease.node`), so it can run beside a whole-node lease of
  another node, which the scheduler could otherwise put its pods on;
- devices anywhere (cluster scope): for a test whose pods must span nodes, or whose needs fit on
  no single node.

Admission: the needs whose devices may overlap a kind's must fit in it, cluster-wide and, for
leases pinned to a node, on that node; a whole node conflicts with any lease whose pods could
land on it. Fairness (no starvation, yet backfill): a waiting whole-node lease reserves the
candidate node it can get soonest, and a later request may not take that node; a later request
may not take devices an earlier waiter could use once that waiter only waits for devices; an
exclusive waiter holds everyone back (after a minute's patience). Backfill: a later request
may still go first when, by earlier runs' durations, it ends well before the holders keeping
the waiter out do. Holders whose process died are dropped, so a killed worker does not wedge
the run.

Guarded devices (`DeviceNeed.guard`, `dra_devices(..., guard=True)`): every device a guarded
need may be allocated (its kind on the lease's node; anywhere for a cluster-scope lease) is
the lease's alone: no other lease whose pods could be allocated one of them is held beside it,
as for a node leased whole (and a waiting one reserves its node the same way). A test that
releases a device and proves, with a probe claim, that the device is allocated again needs
this: the probe asks for the device and every look-alike of it (CEL cannot name a device), and
under counts alone another test could be allocated one of them the moment it is freed.
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
# A test backfills only if it should end this long before a waiter's blockers do: durations vary.
BACKFILL_SLACK = 1.5
BACKFILL_MARGIN_S = 5.0
# A cluster-wide exclusive waiter lets later requests pass this long. Such tests run last, but a
# worker asks for one while other workers still have ordinary tests queued behind their current
# one (xdist hands each worker its next test ahead); those should not wait out the exclusive one.
EXCLUSIVE_PATIENCE_S = 60.0


JOURNAL_FILE = "journal.jsonl"
JOURNAL_MAX_BYTES = 4 << 20  # then it starts again; the one before is kept as journal.jsonl.1


class LeaseError(ConformanceError):
    """A lease can never be granted (unknown kind, more devices than the cluster has)."""


class LeaseTimeout(ConformanceError):
    """Waited too long; the message names who holds what."""


@dataclass(frozen=True)
class DeviceNeed:
    kind: str
    count: int | str = 1  # an int >= 1, or ALL
    guard: bool = False  # no other lease may reach a device of the kind this one may get

    def __str__(self) -> str:
        return f"{self.kind}×{self.count}"


@dataclass(frozen=True)
class DeviceLease:
    ticket: int
    holder: str
    needs: tuple[DeviceNeed, ...]
    exclusive: bool
    waited_s: float
    node: str | None = None  # where the test's pods go: the node leased whole, or pinned to
    book: Path | None = None  # the lease book's directory (node marks live there too)
    whole: bool = False  # `node` is leased whole (dra_node_exclusive), not only devices on it
    # devices no other lease may be allocated while this one is held (guarded needs, whole node)
    guarded: frozenset[str] = frozenset()


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
    `device_sets` (kind -> ids of devices it may be allocated)."""

    def __init__(
        self,
        state_dir: Path,
        device_sets: Mapping[str, frozenset[str]],
        *,
        device_nodes: Mapping[str, str | None] | None = None,
        poll_interval: float = 0.5,
        report_every: float = 30.0,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.state_file = self.state_dir / "leases.json"
        # One line per grant and release, for bench/timeline.py: where the run's time went.
        self.journal_file = self.state_dir / JOURNAL_FILE
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

    def _size(self, kind: str) -> int:
        return len(self.device_sets[kind])

    def _count(self, need: Mapping[str, Any]) -> int:
        return self._size(need["kind"]) if need["count"] == ALL else int(need["count"])

    def _node_devices(self, nodes: set[str]) -> set[str]:
        return {d for d, n in self.device_nodes.items() if n in nodes}

    @staticmethod
    def _scope_of(entry: Mapping[str, Any]) -> str:
        """exclusive | whole | node | cluster (books written before scopes: from their fields)."""
        if entry["exclusive"]:
            return "exclusive"
        return entry.get("scope") or ("whole" if entry.get("candidates") else "cluster")

    def _whole_nodes(self, entry: Mapping[str, Any]) -> set[str]:
        """The node a whole-node lease holds, has reserved, or may get (in that order)."""
        if self._scope_of(entry) != "whole":
            return set()
        if entry.get("node"):
            return {entry["node"]}
        if entry.get("reserved"):
            return {entry["reserved"]}
        return set(entry.get("candidates") or ())

    def _pinned_nodes(self, entry: Mapping[str, Any]) -> set[str]:
        """The node a pinned lease holds, or every node it may get while it waits."""
        if self._scope_of(entry) != "node":
            return set()
        if entry.get("node"):
            return {entry["node"]}
        if entry.get("reserved"):  # a waiting lease with guarded needs
            return {entry["reserved"]}
        return set(entry.get("candidates") or ())

    def _reach(self, entry: Mapping[str, Any], need: Mapping[str, Any]) -> frozenset[str]:
        """The devices a pod of this need may be allocated."""
        ids = self.device_sets[need["kind"]]
        scope = self._scope_of(entry)
        if scope == "node":
            return ids & self._node_devices(self._pinned_nodes(entry))
        whole = self._whole_nodes(entry)
        if scope == "whole" and len(whole) == 1:
            return ids - self._node_devices(whole)  # replacements, off the leased node
        return ids

    def _reach_nodes(self, entry: Mapping[str, Any]) -> set[str]:
        """The nodes the entry's pods may land on."""
        out = set(self._pinned_nodes(entry))
        for need in entry["needs"]:
            ids = self._reach(entry, need)
            out |= {n for d in ids if (n := self.device_nodes.get(d))}
        return out

    def _node_conflict(self, x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
        """A whole node of one is a node the other holds, or could put a pod on; or a device
        one guards is a device the other could be allocated."""
        xw, yw = self._whole_nodes(x), self._whole_nodes(y)
        if xw & (yw | self._reach_nodes(y)) or yw & self._reach_nodes(x):
            return True
        return self._guard_conflict(x, y) or self._guard_conflict(y, x)

    def _guarded(self, entry: Mapping[str, Any]) -> frozenset[str]:
        """The devices the entry's guarded needs may be allocated."""
        out: set[str] = set()
        for need in entry["needs"]:
            if need.get("guard"):
                out |= self._reach(entry, need)
        return frozenset(out)

    def _guard_conflict(self, x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
        """Could a pod of `y` be allocated a device `x` guards?"""
        guarded = self._guarded(x)
        return bool(guarded) and any(guarded & self._reach(y, need) for need in y["needs"])

    def _compete(self, x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
        """Could a device go to a need of either?"""
        for a in x["needs"]:
            ra = self._reach(x, a)
            for b in y["needs"]:
                if ra & self._reach(y, b):
                    return True
        return False

    def _fits(self, entries: Sequence[Mapping[str, Any]]) -> bool:
        """Can these leases (each with its node, if any) be held at once?"""
        if len(entries) > 1 and any(e["exclusive"] for e in entries):
            return False
        for i, x in enumerate(entries):
            if any(self._node_conflict(x, y) for y in entries[i + 1 :]):
                return False
        placed = [(e, n, self._reach(e, n)) for e in entries for n in e["needs"]]
        whole = [n for e in entries for n in self._whole_nodes(e)]
        for kind in {n["kind"] for _, n, _ in placed}:
            ids = self.device_sets[kind]
            used = sum(self._count(n) for _, n, r in placed if r & ids)
            # A node leased whole is taken whole: the needs must fit in what is left.
            used += len(ids & self._node_devices(set(whole)))
            if used > len(ids):
                return False
            # Pinned needs must also fit on their node.
            for node in {n for e in entries for n in self._pinned_nodes(e)}:
                on_node = ids & self._node_devices({node})
                pinned = sum(
                    self._count(n)
                    for e, n, r in placed
                    if node in self._pinned_nodes(e) and r & on_node
                )
                if pinned > len(on_node):
                    return False
        return True

    def _blocked_by(
        self, earlier: Mapping[str, Any], me: Mapping[str, Any], held: Sequence[Mapping[str, Any]]
    ) -> bool:
        """May `me` (placed) not overtake the earlier waiting request?"""
        if me["exclusive"]:
            return True
        if earlier["exclusive"] and time.time() - earlier["since"] < EXCLUSIVE_PATIENCE_S:
            return False  # it runs last anyway: let the tests still queued on workers go first
        if earlier["exclusive"] or self._node_conflict(earlier, me):
            return not self._backfills(earlier, me, held)
        # Once the earlier waits only for devices, later requests must leave them to it.
        waits_for_devices = not any(self._node_conflict(earlier, h) for h in held)
        return waits_for_devices and self._compete(earlier, me)

    @staticmethod
    def _yields(me: Mapping[str, Any], ticket: str, entries: Mapping[str, Any]) -> bool:
        """Within its patience, an exclusive request is not granted while an ordinary one waits:
        when the last holder lets go, both would be grantable, and whichever polled first won
        (DRA-ALLOC-008 and -011 then waited 100 s behind DRA-UPD-001)."""
        if not me["exclusive"] or time.time() - me["since"] >= EXCLUSIVE_PATIENCE_S:
            return False
        return any(
            e["state"] == "waiting" and not e["exclusive"]
            for t, e in entries.items()
            if t != ticket
        )

    def _backfills(
        self, earlier: Mapping[str, Any], me: Mapping[str, Any], held: Sequence[Mapping[str, Any]]
    ) -> bool:
        """Backfill: `me` may go first if, by earlier runs' durations, it ends (with slack)
        before the holders that keep the earlier waiter out do. A test whose duration is
        unknown, or a waiter kept out by one, is never overtaken this way."""
        expected = me.get("expected_s")
        if expected is None:
            return False
        blocking = [
            h
            for h in held
            if earlier["exclusive"] or self._node_conflict(earlier, h) or self._compete(earlier, h)
        ]
        if not blocking or any(h.get("expected_s") is None for h in blocking):
            return False
        now = time.time()
        free_at = max(h["since"] + h["expected_s"] for h in blocking)
        return now + BACKFILL_SLACK * expected + BACKFILL_MARGIN_S <= free_at

    def _options(
        self, me: Mapping[str, Any], held: Sequence[Mapping[str, Any]]
    ) -> list[str | None]:
        """The nodes to try for `me`, best first ([None]: no node to choose)."""
        scope = self._scope_of(me)
        candidates = list(me.get("candidates") or ())
        if scope == "whole":
            # Decided now rather than when the test asked, so a mark set meanwhile (DRA-EXT-006)
            # counts. A test that restarts a kubelet never gets a marked node; any other takes
            # a marked node first and leaves the unmarked ones to the tests that need them.
            marked = marked_nodes_unlocked(self.state_dir)
            if me.get("avoid_marked"):
                return [n for n in candidates if n not in marked]
            return sorted(candidates, key=lambda n: n not in marked)
        if scope == "node":
            # The least busy node first, so pinned tests spread over the nodes.
            def load(node: str) -> int:
                return sum(1 for h in held if node in self._pinned_nodes(h) | self._whole_nodes(h))

            return sorted(candidates, key=load)
        return [None]

    def _grantable(self, state: dict[str, Any], ticket: str) -> str | None | bool:
        """False, or what to grant: the node of a whole-node or pinned lease, else None."""
        entries = state["entries"]
        me = entries[ticket]
        earlier = [
            e for t, e in entries.items() if e["state"] == "waiting" and int(t) < int(ticket)
        ]
        held = [e for e in entries.values() if e["state"] == "held"]
        if self._yields(me, ticket, entries):
            return False
        options = self._options(me, held)
        for node in options:
            placed = dict(me, node=node)
            if self._fits([*held, placed]) and not any(
                self._blocked_by(e, placed, held) for e in earlier
            ):
                return node
        reserves = self._scope_of(me) == "whole" or (
            self._scope_of(me) == "node" and any(n.get("guard") for n in me["needs"])
        )
        if reserves and not me.get("reserved") and options:
            # Reserve the node it can get soonest; later requests leave it alone.
            me["reserved"] = min(
                options,
                key=lambda n: sum(1 for h in held if self._node_conflict(h, dict(me, node=n))),
            )
        return False

    def guarded_devices(self, entry: Mapping[str, Any]) -> frozenset[str]:
        """What no other lease may be allocated while `entry` (granted) is held: its guarded
        needs' devices, and the devices of a node it holds whole (or all, if exclusive)."""
        if entry["exclusive"]:
            return frozenset(self.device_nodes)
        return self._guarded(entry) | self._node_devices(self._whole_nodes(entry))

    def pin_candidates(self, needs: Sequence[DeviceNeed]) -> list[str]:
        """The nodes that publish enough devices for every need (ALL: every device of the kind)."""
        out = []
        for node in self.nodes:
            on_node = self._node_devices({node})
            for need in needs:
                ids = self.device_sets[need.kind]
                if not ids & on_node:
                    break
                if need.count == ALL and not ids <= on_node:
                    break
                if need.count != ALL and len(ids & on_node) < int(need.count):
                    break
            else:
                out.append(node)
        return out if needs else []

    def _validate_nodes(self, needs: Sequence[DeviceNeed], candidates: Sequence[str]) -> None:
        unknown = [n for n in candidates if n not in self.nodes]
        if unknown:
            raise LeaseError(
                f"node lease: {', '.join(unknown)} publish(es) no device",
                f"pick among the nodes with devices: {', '.join(self.nodes) or 'none'}",
            )
        entry = {
            "needs": [{"kind": n.kind, "count": n.count} for n in needs],
            "exclusive": False,
            "scope": "whole",
        }
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
            if size == 0 or wanted > size:
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
        pin: bool = False,
        avoid_marked: bool = False,
        expected_s: float | None = None,
        timeout: float,
    ) -> DeviceLease:
        """Wait until the devices can be leased; raises LeaseTimeout naming the holders.

        `nodes`: lease one of these nodes whole (a node lease), in this order of preference.
        `pin`: lease the devices on one node (the lease's `node`), if one publishes enough of
        them; otherwise anywhere. `avoid_marked`: of `nodes`, never one with a "no kubelet
        restart" mark (the test restarts the kubelet): wait until the mark expires instead.
        `expected_s`: how long the test held its lease in earlier runs (for backfilling)."""
        self._validate(needs)
        if nodes is not None:
            if exclusive:
                raise LeaseError("a lease is cluster-wide exclusive or of one node, not both")
            self._validate_nodes(needs, nodes)
            scope, candidates = "whole", list(nodes)
        elif pin and not exclusive and (on_one := self.pin_candidates(needs)):
            scope, candidates = "node", on_one
        else:
            scope, candidates = ("exclusive" if exclusive else "cluster"), []
        start = time.monotonic()
        entry = {
            "holder": holder,
            "pid": os.getpid(),
            "host": self.host,
            "needs": [{"kind": n.kind, "count": n.count, "guard": n.guard} for n in needs],
            "exclusive": exclusive,
            "scope": scope,
            "candidates": candidates,
            "avoid_marked": avoid_marked,
            "expected_s": expected_s,
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
                        self._journal(
                            "grant",
                            entry,
                            node=node,
                            waited_s=round(waited, 3),
                            needs=entry["needs"],
                        )
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
                            whole=scope == "whole",
                            guarded=self.guarded_devices(state["entries"][ticket]),
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
            entry = state["entries"].pop(str(lease.ticket), None)
            if entry is not None:
                self._journal("release", entry, node=lease.node)

    def _journal(self, event: str, entry: Mapping[str, Any], **fields: Any) -> None:
        """Append one line (under the book's lock); a journal that cannot be written is only
        a missing timeline, never a failed lease."""
        line = {"t": round(time.time(), 3), "event": event, "holder": entry["holder"]}
        line.update(scope=entry["scope"], **fields)
        try:
            if self.journal_file.is_file() and self.journal_file.stat().st_size > JOURNAL_MAX_BYTES:
                os.replace(self.journal_file, self.journal_file.with_suffix(".jsonl.1"))
            with open(self.journal_file, "a") as journal:
                journal.write(json.dumps(line) + "\n")
        except OSError as exc:
            log.debug("lease journal %s: %s", self.journal_file, exc)

    @contextlib.contextmanager
    def lease(
        self,
        holder: str,
        needs: Sequence[DeviceNeed],
        *,
        exclusive: bool = False,
        nodes: Sequence[str] | None = None,
        pin: bool = False,
        avoid_marked: bool = False,
        expected_s: float | None = None,
        timeout: float,
    ) -> Iterator[DeviceLease]:
        granted = self.acquire(
            holder,
            needs,
            exclusive=exclusive,
            nodes=nodes,
            pin=pin,
            avoid_marked=avoid_marked,
            expected_s=expected_s,
            timeout=timeout,
        )
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
    pinned = entry.get("scope") == "node"
    if entry.get("node"):
        return f" (on node {entry['node']})" if pinned else f" (node {entry['node']} whole)"
    if entry.get("candidates"):
        one = "on one node of" if pinned else "a whole node of"
        return f" ({one} {', '.join(entry['candidates'])})"
    return ""
