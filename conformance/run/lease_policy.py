"""The device lease's admission policy: may a waiting request be granted now, and on which node.

Pure: no files, no clock, no processes. The broker (`run.lease`) passes the time and the node
marks in and applies the decision to the book (`run.lease_book`).

Devices are cluster-wide and scarce; the scheduler, not we, picks them. The rule that keeps it
safe: for every kind K, the devices that leases of K *or of any kind overlapping K* may take
must fit in K (a `default` lease may land on a `large` device, so both count against `large`).
Every kind's device set is exact: its class's and its own selectors evaluated on the published
devices as the scheduler evaluates them (conformance.cel).

Scopes. A lease is one of:
- cluster-wide exclusive: nothing else is held beside it;
- a whole node (`dra_node_exclusive`): a test that disrupts one node (cordon, drain, driver
  restart, taints, withdrawal of its devices) owns every device there and learns which node it
  got. Its device needs (replacements) go to the other nodes;
- devices on one node (pinned, the scenario fixture's default): the test's pods are pinned to the
  node it got, so it can run beside a whole-node lease of another node;
- devices anywhere (cluster scope): for a test whose pods must span nodes, or whose needs fit on
  no single node.

Admission: the needs whose devices may overlap a kind's must fit in it, cluster-wide and, for
leases pinned to a node, on that node; a whole node conflicts with any lease whose pods could
land on it. Guarded needs (`DeviceNeed.guard`): every device a guarded need may be allocated is
the lease's alone, as for a node leased whole — a reuse probe asks for a device and every
look-alike of it (CEL cannot name a device), so under counts alone another test could be
allocated one the moment it is freed.

Fairness (no starvation, yet backfill): a waiting whole-node or guarded lease reserves the
candidate node it can get soonest, and a later request may not take that node; a later request
may not take devices an earlier waiter could use once that waiter only waits for devices; an
exclusive waiter holds everyone back (after a minute's patience). Backfill: a later request may
still go first when, by earlier runs' durations, it ends well before the holders keeping the
waiter out do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from conformance.run.lease_types import (
    ALL,
    HELD,
    WAITING,
    BookEntry,
    Decision,
    DeviceNeed,
    LeaseError,
    LeaseRequest,
    Scope,
)

# A test backfills only if it should end this long before a waiter's blockers do: durations vary.
BACKFILL_SLACK = 1.5
BACKFILL_MARGIN_S = 5.0
# A cluster-wide exclusive waiter lets later requests pass this long. Such tests run last, but a
# worker asks for one while other workers still have ordinary tests queued behind their current
# one (xdist hands each worker its next test ahead); those should not wait out the exclusive one.
EXCLUSIVE_PATIENCE_S = 60.0


@dataclass(frozen=True)
class AdmissionPolicy:
    """The rules over one cluster's devices; every process of a run must build it from the same
    `device_sets` (kind -> ids of devices it may be allocated) and `device_nodes` (device id ->
    the node it is published for, None for a network-attached device)."""

    device_sets: Mapping[str, frozenset[str]]
    device_nodes: Mapping[str, str | None]
    exclusive_patience_s: float = EXCLUSIVE_PATIENCE_S

    @property
    def nodes(self) -> list[str]:
        return sorted({n for n in self.device_nodes.values() if n})

    # --- what an entry may reach -------------------------------------------------------------

    def count(self, need: DeviceNeed) -> int:
        return len(self.device_sets[need.kind]) if need.count == ALL else int(need.count)

    def node_devices(self, nodes: set[str]) -> set[str]:
        return {d for d, n in self.device_nodes.items() if n in nodes}

    @staticmethod
    def whole_nodes(entry: BookEntry) -> set[str]:
        """The node a whole-node lease holds, has reserved, or may get (in that order)."""
        return _nodes_of(entry) if entry.scope is Scope.WHOLE else set()

    @staticmethod
    def pinned_nodes(entry: BookEntry) -> set[str]:
        """The node a pinned lease holds, has reserved (guarded), or may get while it waits."""
        return _nodes_of(entry) if entry.scope is Scope.NODE else set()

    def reach(self, entry: BookEntry, need: DeviceNeed) -> frozenset[str]:
        """The devices a pod of this need may be allocated."""
        ids = self.device_sets[need.kind]
        if entry.scope is Scope.NODE:
            return ids & self.node_devices(self.pinned_nodes(entry))
        whole = self.whole_nodes(entry)
        if entry.scope is Scope.WHOLE and len(whole) == 1:
            return ids - self.node_devices(whole)  # replacements, off the leased node
        return ids

    def reach_nodes(self, entry: BookEntry) -> set[str]:
        """The nodes the entry's pods may land on."""
        out = set(self.pinned_nodes(entry))
        for need in entry.needs:
            out |= {n for d in self.reach(entry, need) if (n := self.device_nodes.get(d))}
        return out

    def guarded(self, entry: BookEntry) -> frozenset[str]:
        """The devices the entry's guarded needs may be allocated."""
        out: set[str] = set()
        for need in entry.needs:
            if need.guard:
                out |= self.reach(entry, need)
        return frozenset(out)

    def guarded_devices(self, entry: BookEntry) -> frozenset[str]:
        """What no other lease may be allocated while `entry` (granted) is held: its guarded
        needs' devices, and the devices of a node it holds whole (or all, if exclusive)."""
        if entry.exclusive:
            return frozenset(self.device_nodes)
        return self.guarded(entry) | self.node_devices(self.whole_nodes(entry))

    # --- conflicts ---------------------------------------------------------------------------

    def node_conflict(self, x: BookEntry, y: BookEntry) -> bool:
        """A whole node of one is a node the other holds, or could put a pod on; or a device
        one guards is a device the other could be allocated."""
        xw, yw = self.whole_nodes(x), self.whole_nodes(y)
        if xw & (yw | self.reach_nodes(y)) or yw & self.reach_nodes(x):
            return True
        return self._guard_conflict(x, y) or self._guard_conflict(y, x)

    def _guard_conflict(self, x: BookEntry, y: BookEntry) -> bool:
        """Could a pod of `y` be allocated a device `x` guards?"""
        guarded = self.guarded(x)
        return bool(guarded) and any(guarded & self.reach(y, need) for need in y.needs)

    def compete(self, x: BookEntry, y: BookEntry) -> bool:
        """Could a device go to a need of either?"""
        return any(self.reach(x, a) & self.reach(y, b) for a in x.needs for b in y.needs)

    def fits(self, entries: Sequence[BookEntry]) -> bool:
        """Can these leases (each with its node, if any) be held at once?"""
        if len(entries) > 1 and any(e.exclusive for e in entries):
            return False
        for i, x in enumerate(entries):
            if any(self.node_conflict(x, y) for y in entries[i + 1 :]):
                return False
        placed = [(e, n, self.reach(e, n)) for e in entries for n in e.needs]
        whole = self.node_devices({n for e in entries for n in self.whole_nodes(e)})
        pinned_nodes = {n for e in entries for n in self.pinned_nodes(e)}
        for kind in {n.kind for _, n, _ in placed}:
            ids = self.device_sets[kind]
            # A need counts against its own kind even when it may reach none of it (a node's
            # replacements of a kind that only that node has): it can never be allocated.
            used = sum(self.count(n) for _, n, r in placed if r & ids or n.kind == kind)
            # A node leased whole is taken whole: the needs must fit in what is left.
            if used + len(ids & whole) > len(ids):
                return False
        # Pinned needs must also get distinct devices on their node, all at once.
        for node in pinned_nodes:
            here = frozenset(self.node_devices({node}))
            units = [
                r & here
                for e, n, r in placed
                if node in self.pinned_nodes(e)
                for _ in range(self.count(n))
            ]
            if not assignable(units):
                return False
        return True

    # --- fairness ----------------------------------------------------------------------------

    def _blocked_by(
        self, earlier: BookEntry, me: BookEntry, held: Sequence[BookEntry], now: float
    ) -> bool:
        """May `me` (placed) not overtake the earlier waiting request?"""
        if me.exclusive:
            return True
        if earlier.exclusive and now - earlier.since < self.exclusive_patience_s:
            return False  # it runs last anyway: let the tests still queued on workers go first
        if earlier.exclusive or self.node_conflict(earlier, me):
            return not self._backfills(earlier, me, held, now)
        # Once the earlier waits only for devices, later requests must leave them to it.
        waits_for_devices = not any(self.node_conflict(earlier, h) for h in held)
        if not waits_for_devices:
            return False
        if self.compete(earlier, me):
            return True
        # Nor may one that takes none of its devices leave it no room: fits counts a need against
        # every kind it may reach, so two needs that never share a device can exclude each other.
        staying = [h for h in held if not self.compete(earlier, h)]
        return not any(
            self.fits([*staying, me, replace(earlier, node=node)])
            for node in self._options(earlier, held, frozenset())
        )

    def _yields(
        self, me: BookEntry, ticket: int, entries: Mapping[int, BookEntry], now: float
    ) -> bool:
        """Within its patience, an exclusive request is not granted while an ordinary one waits:
        when the last holder lets go, both would be grantable, and whichever polled first won."""
        if not me.exclusive or now - me.since >= self.exclusive_patience_s:
            return False
        return any(
            e.state == WAITING and not e.exclusive for t, e in entries.items() if t != ticket
        )

    def _backfills(
        self, earlier: BookEntry, me: BookEntry, held: Sequence[BookEntry], now: float
    ) -> bool:
        """Backfill: `me` may go first if, by earlier runs' durations, it ends (with slack)
        before the holders that keep the earlier waiter out do. A test whose duration is
        unknown, or a waiter kept out by one, is never overtaken this way."""
        if me.expected_s is None:
            return False
        blocking = [
            h
            for h in held
            if earlier.exclusive or self.node_conflict(earlier, h) or self.compete(earlier, h)
        ]
        if not blocking or any(h.expected_s is None for h in blocking):
            return False
        free_at = max(h.since + (h.expected_s or 0.0) for h in blocking)
        return now + BACKFILL_SLACK * me.expected_s + BACKFILL_MARGIN_S <= free_at

    def _options(
        self, me: BookEntry, held: Sequence[BookEntry], marked: frozenset[str]
    ) -> list[str | None]:
        """The nodes to try for `me`, best first ([None]: no node to choose)."""
        candidates = list(me.candidates)
        if me.scope is Scope.WHOLE:
            # A test that restarts a kubelet never gets a marked node; any other takes a marked
            # node first and leaves the unmarked ones to the tests that need them.
            if me.avoid_marked:
                return [n for n in candidates if n not in marked]
            return sorted(candidates, key=lambda n: n not in marked)
        if me.scope is Scope.NODE:
            # The least busy node first, so pinned tests spread over the nodes.
            def load(node: str) -> int:
                return sum(1 for h in held if node in self.pinned_nodes(h) | self.whole_nodes(h))

            return sorted(candidates, key=load)
        return [None]

    def decide(
        self,
        entries: Mapping[int, BookEntry],
        ticket: int,
        *,
        now: float,
        marked: frozenset[str] = frozenset(),
    ) -> Decision:
        """Whether the waiting entry `ticket` is granted now (and its node), or, if not, which
        node it reserves meanwhile. `marked`: nodes with a live no-kubelet-restart mark."""
        me = entries[ticket]
        earlier = [e for t, e in entries.items() if e.state == WAITING and t < ticket]
        held = [e for e in entries.values() if e.state == HELD]
        if self._yields(me, ticket, entries, now):
            return Decision(False)
        options = self._options(me, held, marked)
        for node in options:
            placed = replace(me, node=node)
            if self.fits([*held, placed]) and not any(
                self._blocked_by(e, placed, held, now) for e in earlier
            ):
                return Decision(True, node=node)
        reserves = me.scope is Scope.WHOLE or (
            me.scope is Scope.NODE and any(n.guard for n in me.needs)
        )
        if reserves and not me.reserved and options:
            # Reserve the node it can get soonest; later requests leave it alone.
            def conflicts(node: str | None) -> int:
                return sum(1 for h in held if self.node_conflict(h, replace(me, node=node)))

            return Decision(False, reserve=min(options, key=conflicts))
        return Decision(False)

    # --- requests ----------------------------------------------------------------------------

    def pin_candidates(self, needs: Sequence[DeviceNeed]) -> list[str]:
        """The nodes that publish enough devices for all the needs at once, each its own
        (ALL: every device of the kind): two needs of one kind want two devices there."""
        if not needs:
            return []
        return [n for n in self.nodes if self._on_node(n, needs)]

    def _on_node(self, node: str, needs: Sequence[DeviceNeed]) -> bool:
        here = frozenset(self.node_devices({node}))
        units: list[frozenset[str]] = []
        for need in needs:
            ids = self.device_sets[need.kind]
            if need.count == ALL and not ids <= here:
                return False
            units += [ids & here] * self.count(need)
        return assignable(units)

    def entry_for(self, request: LeaseRequest, *, since: float) -> BookEntry:
        """The book entry of a valid request (raises LeaseError for one that can never be
        granted): its scope and the nodes it may get."""
        self.validate(request)
        if request.nodes is not None:
            scope, candidates = Scope.WHOLE, tuple(request.nodes)
        elif (
            request.pin and not request.exclusive and (on_one := self.pin_candidates(request.needs))
        ):
            scope, candidates = Scope.NODE, tuple(on_one)
        else:
            scope, candidates = (Scope.EXCLUSIVE if request.exclusive else Scope.CLUSTER), ()
        return BookEntry(
            holder=request.holder,
            needs=request.needs,
            scope=scope,
            candidates=candidates,
            avoid_marked=request.avoid_marked,
            expected_s=request.expected_s,
            since=since,
        )

    def validate(self, request: LeaseRequest) -> None:
        for need in request.needs:
            self._validate_need(need)
        if request.nodes is None:
            alone = BookEntry(holder=request.holder, needs=request.needs, scope=Scope.CLUSTER)
            if not self.fits([alone]):
                raise LeaseError(
                    f"the test needs {needs_text(request.needs)} at once, more than the "
                    "cluster's devices of those kinds",
                    "add devices (or nodes) to the cluster, or fix the profile's selectors",
                )
            return
        if request.exclusive:
            raise LeaseError("a lease is cluster-wide exclusive or of one node, not both")
        unknown = [n for n in request.nodes if n not in self.nodes]
        if unknown:
            raise LeaseError(
                f"node lease: {', '.join(unknown)} publish(es) no device",
                f"pick among the nodes with devices: {', '.join(self.nodes) or 'none'}",
            )
        bare = tuple(DeviceNeed(n.kind, n.count) for n in request.needs)
        alone = BookEntry(holder=request.holder, needs=bare, scope=Scope.WHOLE)
        if not any(self.fits([replace(alone, node=node)]) for node in request.nodes):
            raise LeaseError(
                f"no node of {', '.join(request.nodes) or 'none'} can be leased whole while "
                f"{needs_text(bare)} more fit on the other nodes",
                "add devices (or nodes) to the cluster",
            )

    def _validate_need(self, need: DeviceNeed) -> None:
        if need.kind not in self.device_sets:
            known = ", ".join(sorted(self.device_sets))
            raise LeaseError(f"unknown device kind {need.kind!r}", f"use one of: {known}")
        if need.count != ALL and (not isinstance(need.count, int) or need.count < 1):
            raise LeaseError(
                f"device count for {need.kind!r} must be >= 1 or 'all', got {need.count!r}"
            )
        size = len(self.device_sets[need.kind])
        wanted = size if need.count == ALL else int(need.count)
        if size == 0 or wanted > size:
            raise LeaseError(
                f"the test needs {wanted} device(s) of kind {need.kind!r}, and the cluster "
                f"publishes {size} matching it",
                "add devices (or nodes) to the cluster, or fix the profile's selector",
            )


def assignable(units: Sequence[frozenset[str]]) -> bool:
    """Can each unit (one device wanted, among these) get a device of its own? Augmenting
    paths: a handful of units and devices."""
    owner: dict[str, int] = {}

    def place(unit: int, seen: set[str]) -> bool:
        for device in sorted(units[unit]):
            if device in seen:
                continue
            seen.add(device)
            if device not in owner or place(owner[device], seen):
                owner[device] = unit
                return True
        return False

    return all(place(u, set()) for u in range(len(units)))


def _nodes_of(entry: BookEntry) -> set[str]:
    if entry.node:
        return {entry.node}
    if entry.reserved:
        return {entry.reserved}
    return set(entry.candidates)


def needs_text(needs: Sequence[DeviceNeed]) -> str:
    return ", ".join(str(n) for n in needs) or "no devices"
