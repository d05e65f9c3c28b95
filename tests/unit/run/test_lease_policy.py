"""Properties of the device lease's admission policy, over generated clusters and request
sequences: what it grants can be held at once, and waiters are neither starved nor overtaken.

The checks use their own, plainer account of where a lease's pods may land (the oracle below),
not the policy's helpers, so a slip in those shows here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conformance.run.lease_policy import AdmissionPolicy
from conformance.run.lease_types import (
    ALL,
    HELD,
    WAITING,
    BookEntry,
    DeviceNeed,
    LeaseError,
    LeaseRequest,
    Scope,
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- generated clusters and requests -----------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn) -> AdmissionPolicy:
    """Two or three nodes of one to three devices, sometimes a network device; `default` is
    every device, plus up to two kinds over random subsets (overlapping or not)."""
    device_nodes: dict[str, str | None] = {}
    for n in range(draw(st.integers(2, 3))):
        for d in range(draw(st.integers(1, 3))):
            device_nodes[f"n{n}/{d}"] = f"n{n}"
    if draw(st.booleans()):
        device_nodes["net/0"] = None
    ids = sorted(device_nodes)
    sets = {"default": frozenset(ids)}
    for kind in ("k1", "k2")[: draw(st.integers(0, 2))]:
        sets[kind] = frozenset(draw(st.lists(st.sampled_from(ids), min_size=1, unique=True)))
    return AdmissionPolicy(sets, device_nodes)


@st.composite
def requests(
    draw: st.DrawFn,
    policy: AdmissionPolicy,
    *,
    exclusive: bool = True,
    durations: bool = True,
    nodes: bool = True,
) -> LeaseRequest:
    """`nodes=False`: neither a whole node nor a guarded need (it can only wait for devices)."""
    kinds = sorted(policy.device_sets)
    needs = draw(
        st.lists(
            st.builds(
                DeviceNeed,
                st.sampled_from(kinds),
                st.sampled_from([1, 1, 2, ALL]),
                st.booleans() if nodes else st.just(False),
            ),
            max_size=2,
        )
    )
    scopes = ["cluster", "pin", "pin"] + ["whole"] * nodes + ["exclusive"] * exclusive
    scope = draw(st.sampled_from(scopes))
    nodes = None
    if scope == "whole":
        nodes = draw(st.lists(st.sampled_from(policy.nodes), min_size=1, unique=True))
    expected = draw(st.none() | st.floats(1, 300)) if durations else None
    return LeaseRequest(
        holder=f"t{draw(st.integers(0, 10**6))}",
        needs=tuple(needs),
        exclusive=scope == "exclusive",
        nodes=nodes,
        pin=scope == "pin",
        expected_s=expected,
    )


# --- a book driven the way the broker drives it ----------------------------------------------


@dataclass
class Book:
    policy: AdmissionPolicy
    entries: dict[int, BookEntry] = field(default_factory=dict)
    now: float = 1_000.0
    next_ticket: int = 1
    granted: list[int] = field(default_factory=list)  # tickets, in the order granted

    def ask(self, request: LeaseRequest) -> int | None:
        """The request's ticket (None: the policy refuses it as impossible)."""
        try:
            entry = self.policy.entry_for(request, since=self.now)
        except LeaseError:
            return None
        ticket, self.next_ticket = self.next_ticket, self.next_ticket + 1
        self.entries[ticket] = entry
        return ticket

    def poll(self, ticket: int) -> bool:
        entry = self.entries[ticket]
        if entry.state != WAITING:
            return entry.state == HELD
        decision = self.policy.decide(self.entries, ticket, now=self.now)
        if decision.grant:
            entry.state, entry.node, entry.since = HELD, decision.node, self.now
            self.granted.append(ticket)
        elif decision.reserve is not None:
            entry.reserved = decision.reserve
        return decision.grant

    def poll_all(self, order: Iterable[int] | None = None) -> None:
        for ticket in list(order if order is not None else sorted(self.entries)):
            if ticket in self.entries:
                self.poll(ticket)

    def release(self, ticket: int) -> None:
        self.entries.pop(ticket, None)

    def held(self) -> list[BookEntry]:
        return [e for e in self.entries.values() if e.state == HELD]

    def waiting(self) -> list[int]:
        return sorted(t for t, e in self.entries.items() if e.state == WAITING)


# --- the oracle: where a held lease's pods may be allocated devices ---------------------------


def reach(policy: AdmissionPolicy, entry: BookEntry, need: DeviceNeed) -> set[str]:
    kind = set(policy.device_sets[need.kind])
    if entry.scope is Scope.NODE:
        return {d for d in kind if policy.device_nodes[d] == entry.node}
    if entry.scope is Scope.WHOLE:
        return {d for d in kind if policy.device_nodes[d] != entry.node}
    return kind


def touches_node(policy: AdmissionPolicy, entry: BookEntry, node: str) -> bool:
    """Could a pod of `entry` run on `node`, or does it hold the node?"""
    if entry.scope in (Scope.NODE, Scope.WHOLE) and entry.node == node:
        return True
    return any(
        policy.device_nodes[d] == node for need in entry.needs for d in reach(policy, entry, need)
    )


def matching_exists(policy: AdmissionPolicy, held: list[BookEntry]) -> bool:
    """Can every held need get its count of distinct devices within its reach, none of them on
    a node leased whole (augmenting paths over device units)?"""
    whole = {e.node for e in held if e.scope is Scope.WHOLE}
    units: list[set[str]] = []
    for entry in held:
        for need in entry.needs:
            devices = {d for d in reach(policy, entry, need) if policy.device_nodes[d] not in whole}
            units += [devices] * (policy.count(need))
    owner: dict[str, int] = {}

    def place(unit: int, seen: set[str]) -> bool:
        for device in units[unit]:
            if device in seen:
                continue
            seen.add(device)
            if device not in owner or place(owner[device], seen):
                owner[device] = unit
                return True
        return False

    return all(place(u, set()) for u in range(len(units)))


def check_held(policy: AdmissionPolicy, held: list[BookEntry]) -> None:
    if any(e.exclusive for e in held):
        assert len(held) == 1, "an exclusive lease beside another"
    assert matching_exists(policy, held), "the held leases' needs cannot all get devices"
    for a in held:
        others = [b for b in held if b is not a]
        if a.scope is Scope.WHOLE:
            assert a.node is not None
            assert not any(touches_node(policy, b, a.node) for b in others), (
                f"a lease beside {a.holder}, which holds node {a.node} whole, can reach it"
            )
        for need in (n for n in a.needs if n.guard):
            guarded = reach(policy, a, need)
            for b in others:
                for other in b.needs:
                    assert not guarded & reach(policy, b, other), (
                        f"{b.holder} may be allocated a device {a.holder} guards"
                    )


# --- properties ------------------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_what_is_granted_can_always_be_held_at_once(data: st.DataObject) -> None:
    policy = data.draw(clusters())
    book = Book(policy)
    for _ in range(data.draw(st.integers(1, 12))):
        step = data.draw(st.sampled_from(["ask", "ask", "release", "tick"]))
        if step == "ask":
            book.ask(data.draw(requests(policy)))
        elif step == "release" and book.held():
            book.release(
                data.draw(st.sampled_from([t for t, e in book.entries.items() if e.state == HELD]))
            )
        else:
            book.now += data.draw(st.floats(0, 120))
        book.poll_all(data.draw(st.permutations(sorted(book.entries))))
        check_held(policy, book.held())


@st.composite
def starvable(draw: st.DrawFn, policy: AdmissionPolicy) -> LeaseRequest:
    """A request that reserves a node while it waits: a node whole (no replacements: what it
    waits for is only the node), or a guarded need pinned to one node."""
    if draw(st.booleans()):
        nodes = draw(st.lists(st.sampled_from(policy.nodes), min_size=1, unique=True))
        return LeaseRequest("waiter", (), nodes=nodes)
    kind = draw(st.sampled_from(sorted(policy.device_sets)))
    return LeaseRequest("waiter", (DeviceNeed(kind, 1, guard=True),), pin=True)


def _held_first(
    data: st.DataObject, policy: AdmissionPolicy, *, nodes: bool = True
) -> tuple[Book, list[int]]:
    """A book with what a few requests were granted (those that had to wait: withdrawn)."""
    book = Book(policy)
    for _ in range(data.draw(st.integers(2, 6))):
        book.ask(data.draw(requests(policy, exclusive=False, durations=False, nodes=nodes)))
        book.poll_all()
    for ticket in book.waiting():
        book.release(ticket)
    return book, sorted(book.entries)


def _later_arrivals_then_release(
    data: st.DataObject, book: Book, waiter: int, first: list[int]
) -> None:
    """Later requests (durations unknown: no backfill) come and get what they may; then the
    holders the waiter found let go, while the later ones keep what they got."""
    for _ in range(data.draw(st.integers(0, 8))):
        book.ask(data.draw(requests(book.policy, exclusive=False, durations=False)))
        book.poll_all()
    for ticket in first:
        book.release(ticket)


def grantable_alone(policy: AdmissionPolicy, request: LeaseRequest) -> bool:
    """Would the request be granted on an empty book? (Starvation means nothing otherwise: a
    request pinned to one node with two needs of one kind, each fitting a node but not both
    together, is never granted.)"""
    book = Book(policy)
    ticket = book.ask(request)
    return ticket is not None and book.poll(ticket)


def _why(book: Book, request: LeaseRequest) -> str:
    held = "; ".join(f"{e.holder} {e.scope} {e.node} {e.needs}" for e in book.held())
    return f"{request} still waits once the holders it found are gone; held: {held}"


@SETTINGS
@given(st.data())
def test_a_waiting_whole_or_guarded_lease_is_not_starved_by_later_requests(
    data: st.DataObject,
) -> None:
    policy = data.draw(clusters())
    book, first = _held_first(data, policy)
    request = data.draw(starvable(policy))
    waiter = book.ask(request)
    if waiter is None or book.entries[waiter].scope not in (Scope.NODE, Scope.WHOLE):
        return  # impossible here, or no node publishes its need: it reserves nothing
    if not grantable_alone(policy, request):
        return
    waited = not book.poll(waiter)
    event(f"the waiter waited: {waited}")
    _later_arrivals_then_release(data, book, waiter, first)
    assert book.poll(waiter), _why(book, request)


@settings(SETTINGS, max_examples=600)
@given(st.data())
def test_a_request_waiting_only_for_devices_is_not_overtaken_by_later_requests(
    data: st.DataObject,
) -> None:
    policy = data.draw(clusters())
    # Holders and a waiter of no whole node and no guarded need: it waits for devices only.
    # (One that waits for a node lets later requests take devices meanwhile, by design.)
    book, first = _held_first(data, policy, nodes=False)
    request = data.draw(requests(policy, exclusive=False, durations=False, nodes=False))
    waiter = book.ask(request)
    if waiter is None or book.poll(waiter) or not grantable_alone(policy, request):
        return
    event("the waiter waited")
    _later_arrivals_then_release(data, book, waiter, first)
    assert book.poll(waiter), _why(book, request)


def _twins(book: Book) -> Iterable[tuple[int, int]]:
    waiting = book.waiting()
    for i, a in enumerate(waiting):
        for b in waiting[i + 1 :]:
            ea, eb = book.entries[a], book.entries[b]
            if (ea.needs, ea.scope, ea.candidates) == (eb.needs, eb.scope, eb.candidates):
                yield a, b


@SETTINGS
@given(st.data())
def test_among_equal_waiting_requests_a_later_one_is_never_granted_before_an_earlier_one(
    data: st.DataObject,
) -> None:
    policy = data.draw(clusters())
    book = Book(policy)
    twin = data.draw(requests(policy, exclusive=False, durations=False))
    for _ in range(data.draw(st.integers(2, 12))):
        step = data.draw(st.sampled_from(["twin", "other", "release", "poll"]))
        if step == "twin":
            book.ask(twin)
        elif step == "other":
            book.ask(data.draw(requests(policy, durations=False)))
        elif step == "release" and book.held():
            book.release(
                data.draw(st.sampled_from([t for t, e in book.entries.items() if e.state == HELD]))
            )
        else:
            book.now += data.draw(st.floats(0, 120))
            book.poll_all(data.draw(st.permutations(sorted(book.entries))))
        for earlier, later in _twins(book):
            if policy.decide(book.entries, later, now=book.now).grant:
                assert policy.decide(book.entries, earlier, now=book.now).grant, (
                    f"ticket {later} is grantable while the equal, earlier {earlier} is not"
                )


@st.composite
def pinned_requests(draw: st.DrawFn, policy: AdmissionPolicy) -> LeaseRequest:
    """Two or three needs pinned to one node, of overlapping kinds or the same one."""
    kinds = sorted(policy.device_sets)
    needs = draw(
        st.lists(
            st.builds(DeviceNeed, st.sampled_from(kinds), st.sampled_from([1, 1, 2])),
            min_size=2,
            max_size=3,
        )
    )
    return LeaseRequest("pinned", tuple(needs), pin=True)


@SETTINGS
@given(st.data())
def test_a_node_offered_to_a_pinned_lease_holds_all_its_needs_at_once(
    data: st.DataObject,
) -> None:
    policy = data.draw(clusters())
    request = data.draw(pinned_requests(policy))
    try:
        entry = policy.entry_for(request, since=0.0)
    except LeaseError:
        return
    for node in entry.candidates:
        placed = BookEntry(request.holder, request.needs, Scope.NODE, node=node, state=HELD)
        assert matching_exists(policy, [placed]), (
            f"node {node} is offered to {request.needs}, yet cannot give them distinct devices"
        )
    book = Book(policy)
    ticket = book.ask(request)
    assert ticket is not None
    event(f"scope {book.entries[ticket].scope}")
    # Grantable alone: pinned where the node holds every need at once, else devices anywhere.
    assert book.poll(ticket), f"{request.needs} is never granted on an empty book"
    check_held(policy, book.held())


def test_a_later_request_that_takes_none_of_the_waiters_devices_still_leaves_it_room() -> None:
    # The waiter needs n1's two devices (one of k2, one more); a later pinned request could
    # have n0/0 without taking either, but beside it the waiter would never fit (fits counts
    # each need against every kind it may reach): it must not go first.
    policy = AdmissionPolicy(
        {
            "default": frozenset({"n0/0", "n1/0", "n1/1"}),
            "k2": frozenset({"n0/0", "n1/0"}),
        },
        {"n0/0": "n0", "n1/0": "n1", "n1/1": "n1"},
    )
    book = Book(policy)
    holder = book.ask(LeaseRequest("holder", (DeviceNeed("default", 1),)))
    book.poll_all()
    waiter = book.ask(
        LeaseRequest("waiter", (DeviceNeed("default", 1), DeviceNeed("k2", 1)), pin=True)
    )
    assert not book.poll(waiter)
    later = book.ask(LeaseRequest("later", (DeviceNeed("default", 1),), pin=True))
    assert not book.poll(later)
    book.release(holder)
    assert book.poll(waiter)
