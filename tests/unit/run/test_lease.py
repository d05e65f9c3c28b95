"""The device lease, across real processes sharing one state directory."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import threading
import time
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest
from helpers.file_lease_book import JOURNAL_FILE, FileLeaseBook

from conformance.kube.waits import wait_until
from conformance.model.devices import PublishedDevice
from conformance.model.profile_parse import load_profile
from conformance.plugin.markers import (
    ItemView,
    NodeExclusive,
    across_nodes_wanted,
    lease_rank,
    parse_devices,
    parse_node_exclusive,
    run_order,
)
from conformance.run import lease as lease_module
from conformance.run import lease_book as lease_book_module
from conformance.run import node_marks as node_marks_module
from conformance.run.context import ClusterInfo, RunContext
from conformance.run.lease import (
    ALL,
    DeviceLeaseBroker,
    DeviceNeed,
    LeaseError,
    LeaseRequest,
    LeaseTimeout,
    reclaim,
)
from conformance.run.node_marks import (
    active_marks,
    mark_no_kubelet_restart,
    no_kubelet_restart,
    wait_until_kubelet_restart_allowed,
)
from conformance.scenario_api.placement import PlacementError, pick_node, sole_node

SETS = {
    "default": frozenset({"w1/a", "w1/b", "w2/c"}),
    "big": frozenset({"w1/a"}),
    "small": frozenset({"w1/b", "w2/c"}),
}
CTX = multiprocessing.get_context("fork")


def _await_entry(broker: DeviceLeaseBroker, holder: str, key: str | None = None) -> None:
    """Wait until `holder` is in the book (and its entry has `key` set): a test's order of
    requests must not depend on how fast a loaded machine starts a thread or a process."""
    wait_until(
        broker.holders,
        lambda book: any(e["holder"] == holder and (key is None or e.get(key)) for e in book),
        describe=f"{holder} in the lease book" + (f" with {key}" if key else ""),
        timeout=60,
        interval=0.01,
    )


def _hold(
    state_dir: str,
    holder: str,
    kind: str,
    count: int | str,
    exclusive: bool,
    hold: float | str | Barrier,
    start_after: float | str,
    queue: multiprocessing.Queue,
) -> None:
    """Ask for the lease `start_after` seconds in, or once the named holder is in the book
    (an order that must not depend on how fast a loaded machine forks). Hold it `hold`
    seconds, or until the named holder is in the book, or until another holder meets this
    one at the barrier (both hold it then, however slowly either was scheduled)."""
    broker = DeviceLeaseBroker(FileLeaseBook(state_dir), SETS, poll_interval=0.02)
    if isinstance(start_after, str):
        _await_entry(broker, start_after)
    else:
        time.sleep(start_after)
    needs = [DeviceNeed(kind, count)] if kind else []
    with broker.lease(LeaseRequest(holder, needs, exclusive=exclusive), timeout=60):
        start = time.monotonic()
        if isinstance(hold, str):
            _await_entry(broker, hold)
        elif isinstance(hold, float | int):
            time.sleep(hold)
        else:
            hold.wait(60)
        end = time.monotonic()
    queue.put((holder, start, end))


def _run(
    tmp_path: Path,
    specs: list[tuple[str, str, int | str, bool, float | str | Barrier, float | str]],
) -> dict[str, tuple[float, float]]:
    queue: multiprocessing.Queue = CTX.Queue()
    procs = [CTX.Process(target=_hold, args=(str(tmp_path), *spec, queue)) for spec in specs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
        assert p.exitcode == 0
    results = [queue.get(timeout=30) for _ in specs]
    return {holder: (start, end) for holder, start, end in results}


def _max_overlap(intervals: list[tuple[float, float]]) -> int:
    events = sorted(
        [(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda x: (x[0], x[1])
    )
    level = peak = 0
    for _, delta in events:
        level += delta
        peak = max(peak, level)
    return peak


def test_parallel_holders_never_exceed_capacity(tmp_path: Path) -> None:
    # Each holder waits for a second one to hold beside it: two at a time for sure (a fixed
    # hold time would let a loaded machine start them one after the other). An even count,
    # so that every holder finds its pair; a broker granting one at a time breaks the barrier.
    pairs = CTX.Barrier(2)
    spans = _run(tmp_path, [(f"t{i}", "small", 1, False, pairs, 0.0) for i in range(6)])
    # Two small devices: two at a time, never three, and really in parallel.
    assert _max_overlap(list(spans.values())) == 2


def test_exclusive_holds_alone(tmp_path: Path) -> None:
    specs = [("excl", "", 1, True, 0.4, 0.05)]
    specs += [(f"t{i}", "small", 1, False, 0.2, 0.0) for i in range(4)]
    spans = _run(tmp_path, specs)
    ex_start, ex_end = spans.pop("excl")
    for start, end in spans.values():
        assert end <= ex_start or start >= ex_end


def test_an_exclusive_waiter_is_not_overtaken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lease_module, "EXCLUSIVE_PATIENCE_S", 0.0)  # the forked holders see it
    # Each asks once the one before it is in the book, and "first" holds until "late" asked:
    # "late" always comes while "excl" waits for "first" (fixed times let a loaded machine
    # start "excl" or "late" only after the one it waits for had come and gone).
    spans = _run(
        tmp_path,
        [
            ("first", "small", 1, False, "late", 0.0),
            ("excl", "", 1, True, 0.2, "first"),
            ("late", "small", 1, False, 0.1, "excl"),  # would fit beside "first", but excl waits
        ],
    )
    assert spans["excl"][0] >= spans["first"][1]
    assert spans["late"][0] >= spans["excl"][1]


def test_a_dead_holder_does_not_wedge_the_run(tmp_path: Path) -> None:
    def die_holding() -> None:
        DeviceLeaseBroker(FileLeaseBook(tmp_path), SETS).acquire(
            LeaseRequest("doomed", [DeviceNeed("big")]), timeout=5
        )
        os._exit(0)  # no release

    p = CTX.Process(target=die_holding)
    p.start()
    p.join(60)
    assert p.exitcode == 0
    # Polling only every 60 s, past the timeout: granted at the first look or not at all,
    # whatever time a loaded machine takes for that look.
    broker = DeviceLeaseBroker(FileLeaseBook(tmp_path), SETS, poll_interval=60)
    assert [h["holder"] for h in broker.holders()] == []  # the dead entry is dropped
    broker.acquire(LeaseRequest("next", [DeviceNeed("big")]), timeout=1)


def test_default_lease_counts_against_the_kinds_it_overlaps(tmp_path: Path) -> None:
    broker = DeviceLeaseBroker(FileLeaseBook(tmp_path), SETS, poll_interval=0.02)
    held = broker.acquire(LeaseRequest("holder-a", [DeviceNeed("big")]), timeout=1)
    # A default claim might land on the only big device: it must wait.
    with pytest.raises(LeaseTimeout) as err:
        broker.acquire(LeaseRequest("tests/x.py::test_b", [DeviceNeed("default")]), timeout=0.2)
    assert re.match(
        r"tests/x.py::test_b: gave up after \d+s waiting for devices default×1; "
        rf"held by: holder-a \(pid {os.getpid()} on \S+, big×1, \d+s\)",
        str(err.value),
    )
    # The small devices are disjoint from big: no wait.
    broker.release(
        broker.acquire(LeaseRequest("small-user", [DeviceNeed("small", ALL)]), timeout=0.2)
    )
    broker.release(held)
    broker.release(broker.acquire(LeaseRequest("b", [DeviceNeed("default", 3)]), timeout=0.2))
    assert broker.holders() == []


def test_a_timed_out_waiter_leaves_no_trace(tmp_path: Path) -> None:
    broker = DeviceLeaseBroker(FileLeaseBook(tmp_path), SETS, poll_interval=0.02)
    held = broker.acquire(LeaseRequest("a", [DeviceNeed("big")]), timeout=1)
    with pytest.raises(LeaseTimeout):
        broker.acquire(LeaseRequest("b", [DeviceNeed("big")], exclusive=True), timeout=0.1)
    assert [h["holder"] for h in broker.holders()] == ["a"]
    broker.release(held)


@pytest.mark.parametrize(
    "need,message",
    [
        (
            DeviceNeed("big", 2),
            "the test needs 2 device(s) of kind 'big', and the cluster publishes "
            "1 matching it\n  -> add devices (or nodes) to the cluster, or fix "
            "the profile's selector",
        ),
        (
            DeviceNeed("huge"),
            "unknown device kind 'huge'\n  -> use one of: big, default, small",
        ),
        (DeviceNeed("big", 0), "device count for 'big' must be >= 1 or 'all', got 0"),
    ],
)
def test_impossible_requests_fail_at_once(tmp_path: Path, need: DeviceNeed, message: str) -> None:
    broker = DeviceLeaseBroker(FileLeaseBook(tmp_path), SETS)
    with pytest.raises(LeaseError) as err:
        broker.acquire(LeaseRequest("x", [need]), timeout=100)
    assert str(err.value) == message


# --- node leases -----------------------------------------------------------------------------

NODES = {"w1/a": "w1", "w1/b": "w1", "w2/c": "w2"}


def _nodes_broker(tmp_path: Path) -> DeviceLeaseBroker:
    return DeviceLeaseBroker(FileLeaseBook(tmp_path), SETS, device_nodes=NODES, poll_interval=0.02)


def test_node_leases_get_different_nodes_and_a_third_waits(tmp_path: Path) -> None:
    broker = _nodes_broker(tmp_path)
    first = broker.acquire(LeaseRequest("a", [], nodes=["w1", "w2"]), timeout=1)
    second = broker.acquire(LeaseRequest("b", [], nodes=["w1", "w2"]), timeout=1)
    assert (first.node, second.node) == ("w1", "w2")
    assert first.book == FileLeaseBook(tmp_path)
    with pytest.raises(LeaseTimeout, match=r"held by: a \(.*node w1 whole"):
        broker.acquire(LeaseRequest("c", [], nodes=["w1", "w2"]), timeout=0.1)


def test_a_node_lease_excludes_device_leases_that_could_land_on_its_node(tmp_path: Path) -> None:
    broker = _nodes_broker(tmp_path)
    node = broker.acquire(LeaseRequest("drain", [], nodes=["w2"]), timeout=1)
    # default and small have a device on w2: the scheduler could put their pods there.
    for kind in ("default", "small"):
        with pytest.raises(LeaseTimeout):
            broker.acquire(LeaseRequest(kind, [DeviceNeed(kind)]), timeout=0.1)
    # big lives on w1 only: it runs beside the node lease.
    broker.release(broker.acquire(LeaseRequest("big", [DeviceNeed("big")]), timeout=0.1))
    broker.release(node)
    broker.release(broker.acquire(LeaseRequest("default", [DeviceNeed("default")]), timeout=0.1))


def test_a_held_device_lease_keeps_node_leases_off_the_nodes_it_reaches(tmp_path: Path) -> None:
    broker = _nodes_broker(tmp_path)
    big = broker.acquire(LeaseRequest("big", [DeviceNeed("big")]), timeout=1)
    node = broker.acquire(LeaseRequest("drain", [], nodes=["w1", "w2"]), timeout=1)
    assert node.node == "w2"  # w1 hosts the big device someone holds
    broker.release(node)
    small = broker.acquire(
        LeaseRequest("small", [DeviceNeed("small")]), timeout=1
    )  # reaches w1 and w2
    with pytest.raises(LeaseTimeout):
        broker.acquire(LeaseRequest("drain", [], nodes=["w1", "w2"]), timeout=0.1)
    broker.release(small)
    broker.release(big)


def test_a_node_leases_own_needs_count_against_the_other_nodes(tmp_path: Path) -> None:
    broker = _nodes_broker(tmp_path)
    # w1 whole plus one default device elsewhere (w2/c): fits.
    lease = broker.acquire(LeaseRequest("evict", [DeviceNeed("default")], nodes=["w1"]), timeout=1)
    assert lease.node == "w1"
    broker.release(lease)
    # Two more default devices off w1 do not exist: it can never be granted.
    with pytest.raises(LeaseError, match="no node of w1 can be leased whole"):
        broker.acquire(LeaseRequest("evict", [DeviceNeed("default", 2)], nodes=["w1"]), timeout=100)
    # Off w2, two are left (w1/a, w1/b).
    assert (
        broker.acquire(LeaseRequest("e", [DeviceNeed("default", 2)], nodes=["w2"]), timeout=1).node
        == "w2"
    )


def test_node_leases_whose_needs_reach_each_others_node_do_not_overlap(tmp_path: Path) -> None:
    broker = _nodes_broker(tmp_path)
    # a replacement pod of small may land on w2: no one may disrupt w2 meanwhile.
    broker.acquire(LeaseRequest("cordon-w1", [DeviceNeed("small")], nodes=["w1"]), timeout=1)
    with pytest.raises(LeaseTimeout):
        broker.acquire(LeaseRequest("restart-w2", [], nodes=["w2"]), timeout=0.1)


def test_a_waiting_node_lease_is_not_overtaken_by_a_device_lease(tmp_path: Path) -> None:
    broker = _nodes_broker(tmp_path)
    held = broker.acquire(LeaseRequest("default", [DeviceNeed("default")]), timeout=1)
    got: dict[str, str | None] = {}

    def wait_for_node() -> None:
        got["node"] = (
            _nodes_broker(tmp_path)
            .acquire(LeaseRequest("drain", [], nodes=["w1"]), timeout=30)
            .node
        )

    waiter = threading.Thread(target=wait_for_node)
    waiter.start()
    _await_entry(broker, "drain", "reserved")
    # small x1 would fit beside default x1, but could land on w1, which "drain" waits for.
    with pytest.raises(LeaseTimeout):
        broker.acquire(LeaseRequest("late", [DeviceNeed("small")]), timeout=0.2)
    broker.release(held)
    waiter.join(30)
    assert got == {"node": "w1"}


@pytest.mark.parametrize(
    "nodes,exclusive,message",
    [
        (["w9"], False, "node lease: w9 publish(es) no device\n  -> pick among the nodes"),
        (["w1"], True, "a lease is cluster-wide exclusive or of one node, not both"),
    ],
)
def test_impossible_node_leases_fail_at_once(
    tmp_path: Path, nodes: list[str], exclusive: bool, message: str
) -> None:
    with pytest.raises(LeaseError) as err:
        _nodes_broker(tmp_path).acquire(
            LeaseRequest("x", [], nodes=nodes, exclusive=exclusive), timeout=100
        )
    assert str(err.value).startswith(message)


class _MarksClock:
    """The marks' wall clock, moved by the test: how long a mark lasts must not depend on how
    fast a loaded machine runs the test."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def marks_clock(monkeypatch: pytest.MonkeyPatch) -> _MarksClock:
    clock = _MarksClock()
    monkeypatch.setattr(node_marks_module, "time", clock)
    monkeypatch.setattr(lease_book_module, "time", clock)
    return clock


def test_node_marks_last_until_they_expire(tmp_path: Path, marks_clock: _MarksClock) -> None:
    assert no_kubelet_restart(FileLeaseBook(tmp_path), "w1") is None
    mark_no_kubelet_restart(
        FileLeaseBook(tmp_path), "w1", marks_clock.now + 30, "device plugin grace period"
    )
    mark_no_kubelet_restart(
        FileLeaseBook(tmp_path), "w1", marks_clock.now + 10, "shorter: the later mark wins"
    )
    mark = no_kubelet_restart(FileLeaseBook(tmp_path), "w1")
    assert mark is not None and mark.why == "device plugin grace period"
    assert no_kubelet_restart(FileLeaseBook(tmp_path), "w2") is None
    with pytest.raises(TimeoutError, match=r"kubelet on w1 must not restart for another 30s"):
        wait_until_kubelet_restart_allowed(
            FileLeaseBook(tmp_path), "w1", timeout=20, sleep=marks_clock.sleep
        )
    waited = wait_until_kubelet_restart_allowed(
        FileLeaseBook(tmp_path), "w1", timeout=60, sleep=marks_clock.sleep
    )
    assert waited == pytest.approx(30)
    assert (
        no_kubelet_restart(FileLeaseBook(tmp_path), "w1") is None
        and active_marks(FileLeaseBook(tmp_path)) == []
    )


def test_a_test_that_restarts_no_kubelet_takes_a_marked_node_first(tmp_path: Path) -> None:
    broker = _nodes_broker(tmp_path)
    # w1 got a "no kubelet restart" mark: a node lease that restarts no kubelet takes it, so the
    # unmarked w2 stays free for the tests that restart one
    mark_no_kubelet_restart(
        FileLeaseBook(tmp_path), "w1", time.time() + 60, "device plugin grace period"
    )
    lease = broker.acquire(LeaseRequest("drains a node", [], nodes=["w2", "w1"]), timeout=1)
    assert lease.node == "w1"
    restart = broker.acquire(
        LeaseRequest("restarts a kubelet", [], nodes=["w1", "w2"], avoid_marked=True), timeout=1
    )
    assert restart.node == "w2"
    broker.release(lease)
    broker.release(restart)
    # without marks, the candidates' order stands
    unmarked = _nodes_broker(tmp_path / "unmarked")
    assert (
        unmarked.acquire(LeaseRequest("drains a node", [], nodes=["w2", "w1"]), timeout=1).node
        == "w2"
    )


# --- leases pinned to one node ------------------------------------------------------------------

# Two nodes with two devices each; "one" has a device on each node, "wide" is every device.
PIN_SETS = {
    "default": frozenset({"a/1", "a/2", "b/1", "b/2"}),
    "one": frozenset({"a/1", "b/1"}),
}
PIN_NODES = {"a/1": "a", "a/2": "a", "b/1": "b", "b/2": "b"}


def _pin_broker(tmp_path: Path) -> DeviceLeaseBroker:
    return DeviceLeaseBroker(
        FileLeaseBook(tmp_path), PIN_SETS, device_nodes=PIN_NODES, poll_interval=0.02
    )


def test_pinned_leases_spread_over_the_nodes_and_fit_each_node(tmp_path: Path) -> None:
    broker = _pin_broker(tmp_path)
    first = broker.acquire(LeaseRequest("t1", [DeviceNeed("default")], pin=True), timeout=1)
    second = broker.acquire(LeaseRequest("t2", [DeviceNeed("default")], pin=True), timeout=1)
    assert (first.node, second.node) == ("a", "b") and not first.whole
    # Two devices on one node: a and b each have one left, so it waits for a release.
    with pytest.raises(LeaseTimeout, match=r"on one node of a, b"):
        broker.acquire(LeaseRequest("t3", [DeviceNeed("default", 2)], pin=True), timeout=0.1)
    broker.release(first)
    assert (
        broker.acquire(LeaseRequest("t3", [DeviceNeed("default", 2)], pin=True), timeout=1).node
        == "a"
    )


def test_needs_no_node_can_hold_are_leased_cluster_wide(tmp_path: Path) -> None:
    broker = _pin_broker(tmp_path)
    assert broker.pin_candidates([DeviceNeed("default", 3)]) == []
    assert broker.pin_candidates([DeviceNeed("one", ALL)]) == []
    assert broker.pin_candidates([DeviceNeed("default"), DeviceNeed("one")]) == ["a", "b"]
    # Each fits a node alone, not both at once: three devices, where a node has two.
    assert broker.pin_candidates([DeviceNeed("default", 2), DeviceNeed("one")]) == []
    lease = broker.acquire(LeaseRequest("t", [DeviceNeed("default", 3)], pin=True), timeout=1)
    assert lease.node is None


def test_a_pinned_lease_runs_beside_a_whole_lease_of_another_node(tmp_path: Path) -> None:
    broker = _pin_broker(tmp_path)
    drain = broker.acquire(LeaseRequest("drain", [], nodes=["a", "b"]), timeout=1)
    assert drain.node == "a" and drain.whole
    pinned = broker.acquire(LeaseRequest("t", [DeviceNeed("default")], pin=True), timeout=1)
    assert pinned.node == "b"
    # unpinned, its pod could land on the drained node
    with pytest.raises(LeaseTimeout, match=r"held by: drain .*node a whole"):
        broker.acquire(LeaseRequest("anywhere", [DeviceNeed("default")]), timeout=0.1)
    # and no other node is free to be leased whole
    with pytest.raises(LeaseTimeout):
        broker.acquire(LeaseRequest("restart", [], nodes=["a", "b"]), timeout=0.1)


def test_a_waiting_whole_lease_reserves_a_node_and_pinned_tests_use_the_other(
    tmp_path: Path,
) -> None:
    broker = _pin_broker(tmp_path)
    on_a = broker.acquire(LeaseRequest("t1", [DeviceNeed("default")], pin=True), timeout=1)
    on_b = broker.acquire(LeaseRequest("t2", [DeviceNeed("default")], pin=True), timeout=1)
    assert (on_a.node, on_b.node) == ("a", "b")
    got: dict[str, str | None] = {}

    def wait_for_node() -> None:
        lease = _pin_broker(tmp_path).acquire(
            LeaseRequest("drain", [], nodes=["a", "b"]), timeout=30
        )
        got["node"] = lease.node

    waiter = threading.Thread(target=wait_for_node)
    waiter.start()
    _await_entry(broker, "drain", "reserved")
    reserved = {e["holder"]: e.get("reserved") for e in broker.holders()}["drain"]
    assert reserved == "a"
    # a later pinned test goes to b, not to the node the drain waits for
    late = broker.acquire(LeaseRequest("late", [DeviceNeed("default")], pin=True), timeout=1)
    assert late.node == "b"
    with pytest.raises(LeaseTimeout):  # b is full, a is reserved
        broker.acquire(LeaseRequest("later", [DeviceNeed("default")], pin=True), timeout=0.2)
    broker.release(on_a)
    waiter.join(30)
    assert got == {"node": "a"}


def test_a_whole_lease_waiting_only_for_devices_is_not_overtaken(tmp_path: Path) -> None:
    broker = _pin_broker(tmp_path)
    # b's devices are held by pinned tests; "evict" wants a whole and a replacement on b
    holders = [
        broker.acquire(LeaseRequest(f"t{i}", [DeviceNeed("default")], pin=True), timeout=1)
        for i in (1, 2, 3, 4)
    ]
    assert sorted(h.node for h in holders) == ["a", "a", "b", "b"]
    for h in holders:
        if h.node == "a":
            broker.release(h)
    got: dict[str, str | None] = {}

    def wait_for_node() -> None:
        lease = _pin_broker(tmp_path).acquire(
            LeaseRequest("evict", [DeviceNeed("default")], nodes=["a"]), timeout=30
        )
        got["node"] = lease.node

    waiter = threading.Thread(target=wait_for_node)
    waiter.start()
    _await_entry(broker, "evict", "reserved")
    assert "node" not in got  # a is free, but its replacement has no device on b yet
    b_holders = [h for h in holders if h.node == "b"]
    broker.release(b_holders[0])
    # the freed device on b is the evict lease's, not a later pinned test's
    with pytest.raises(LeaseTimeout):
        broker.acquire(LeaseRequest("late", [DeviceNeed("default")], pin=True), timeout=0.2)
    waiter.join(30)
    assert got == {"node": "a"}


# --- declaring a node lease, and placing a test on it -----------------------------------------


def _item(*markers: tuple[str, tuple, dict]) -> ItemView:
    return ItemView("scenarios/x/test_x.py::test_x", Path("scenarios/x/test_x.py"), list(markers))


def test_node_exclusive_marker_is_parsed_with_its_defaults() -> None:
    assert parse_node_exclusive(_item()) == (None, [])
    assert parse_node_exclusive(_item(("dra_node_exclusive", (), {}))) == (NodeExclusive(), [])
    got = parse_node_exclusive(_item(("dra_node_exclusive", ("big",), {"at_least": 2})), SETS)
    assert got == (NodeExclusive("big", 2), [])


@pytest.mark.parametrize(
    "markers,problem",
    [
        ([("dra_node_exclusive", ("huge",), {})], "dra_node_exclusive('huge'): not a device kind"),
        ([("dra_node_exclusive", (), {"at_least": 0})], "at_least=0): must be an integer >= 1"),
        (
            [("dra_node_exclusive", (), {"nodes": 2})],
            "dra_node_exclusive takes dra_node_exclusive(kind=",
        ),
        (
            [("dra_node_exclusive", (), {}), ("dra_devices", ("big",), {"exclusive": True})],
            "dra_node_exclusive and dra_devices(..., exclusive=True): pick one scope",
        ),
    ],
)
def test_a_bad_node_exclusive_marker_is_a_collection_problem(
    markers: list[tuple[str, tuple, dict]], problem: str
) -> None:
    lease, problems = parse_node_exclusive(_item(*markers), SETS)
    assert lease is None
    assert len(problems) == 1 and problem in problems[0], problems


def _context(
    tmp_path: Path, devices: list[PublishedDevice], device_sets: dict[str, frozenset[str] | None]
) -> RunContext:
    """A run's context on nodes w1 and w2 with these devices and device sets."""
    return RunContext(
        run_id="r",
        run_dir=tmp_path,
        profile=load_profile(Path(__file__).parents[3] / "drivers" / "fake" / "profile.yaml"),
        cluster=ClusterInfo("kind", "c", "/k", None, True),
        git_version="v1.37.2",
        served_resources={},
        feature_gates=None,
        feature_gates_error=None,
        nodes=("w1", "w2"),
        devices=tuple(devices),
        device_sets=device_sets,
        workload_image="w",
    )


def test_pick_node_takes_the_leased_node_and_checks_it_qualifies(tmp_path: Path) -> None:
    devices = [PublishedDevice("w1", "a", "w1"), PublishedDevice("w1", "b", "w1")]
    devices.append(PublishedDevice("w2", "c", "w2"))
    context = _context(tmp_path, devices, {"default": frozenset(d.id for d in devices)})
    broker = DeviceLeaseBroker(FileLeaseBook(tmp_path), context.device_sets, device_nodes=NODES)
    on_w1 = broker.acquire(LeaseRequest("t", [], nodes=["w1"]), timeout=1)
    assert pick_node(context, lease=on_w1) == "w1"  # not w2, which has fewer devices
    with pytest.raises(PlacementError, match="w1=2, w2=1"):
        pick_node(context, at_least=3, lease=on_w1)
    broker.release(on_w1)
    plain = broker.acquire(LeaseRequest("t", [DeviceNeed("default")]), timeout=1)
    with pytest.raises(PlacementError, match="needs a node lease"):
        pick_node(context, lease=plain)


def test_sole_node_is_the_node_holding_every_device_of_a_kind(tmp_path: Path) -> None:
    devices = [PublishedDevice("w1", "a", "w1"), PublishedDevice("w1", "b", "w1")]
    devices += [PublishedDevice("w2", "c", "w2"), PublishedDevice("net", "d", None)]
    sets = {
        "default": frozenset({"w1/a", "w1/b", "w2/c"}),
        "big": frozenset({"w1/a", "w1/b"}),
        "remote": frozenset({"net/d"}),
        "none": frozenset(),
    }
    context = _context(tmp_path, devices, sets)
    assert sole_node(context, "big") == "w1"
    assert sole_node(context, "default") is None  # on two nodes
    assert sole_node(context, "remote") is None  # of no node
    assert sole_node(context, "none") is None
    assert sole_node(context, "typo") is None


def test_run_early_and_node_exclusive_tests_run_first_and_cluster_exclusive_ones_last() -> None:
    plain = _item(("dra_devices", ("big",), {}))
    node = _item(("dra_node_exclusive", (), {}), ("dra_devices", ("small",), {}))
    cluster = _item(("dra_devices", ("big",), {"exclusive": True}))
    early = _item(("dra_node_exclusive", (), {}), ("dra_run_early", ("a clock",), {}))
    order = sorted([plain, node, plain, cluster, early], key=lease_rank)
    assert order == [early, node, plain, plain, cluster]


def _named(name: str, *markers: tuple[str, tuple, dict]) -> ItemView:
    return ItemView(f"scenarios/x/test_x.py::{name}", Path("scenarios/x/test_x.py"), list(markers))


def test_within_a_rank_the_longest_run_first_and_devices_anywhere_after_the_rest() -> None:
    short = _named("short", ("dra_devices", ("big",), {}))
    long = _named("long", ("dra_devices", ("big",), {}))
    new = _named("new", ("dra_devices", ("big",), {}))  # never measured: after the measured
    spread = _named("spread", ("dra_devices", ("big",), {"across_nodes": True}))
    every = _named("every", ("dra_devices", ("big", "all"), {}))
    drain = _named("drain", ("dra_node_exclusive", (), {}), ("dra_devices", ("small",), {}))
    restart = _named("restart", ("dra_node_exclusive", (), {}))
    taint = _named("taint", ("dra_node_exclusive", (), {}))
    durations = {
        "test_x.py::short": 3.0,
        "test_x.py::long": 30.0,
        "test_x.py::spread": 90.0,
        "test_x.py::every": 5.0,
        "test_x.py::drain": 20.0,
        "test_x.py::restart": 100.0,
        "test_x.py::taint": 10.0,
    }
    items = [short, every, new, spread, long, taint, drain, restart]
    order = sorted(items, key=lambda i: run_order(i, durations))
    # node-exclusive: those with devices on other nodes first, then the longest first
    assert [i.nodeid.rsplit("::", 1)[1] for i in order] == [
        "drain",
        "restart",
        "taint",
        "long",
        "short",
        "new",
        "spread",
        "every",
    ]


def test_an_across_nodes_flag_that_is_not_a_bool_is_a_collection_problem() -> None:
    item = _item(("dra_devices", ("big",), {"across_nodes": "yes"}))
    assert parse_devices(item, SETS)[2] == [
        "scenarios/x/test_x.py::test_x: dra_devices('big', across_nodes=...): across_nodes "
        "must be True or False"
    ]
    assert not across_nodes_wanted(_item(("dra_devices", ("big",), {})))


def test_a_test_that_restarts_kubelets_is_never_granted_a_marked_node(
    tmp_path: Path, marks_clock: _MarksClock
) -> None:
    broker = _nodes_broker(tmp_path)
    mark_no_kubelet_restart(
        FileLeaseBook(tmp_path), "w1", marks_clock.now + 60, "device plugin grace period"
    )
    other = broker.acquire(LeaseRequest("on w2", [], nodes=["w2"]), timeout=1)
    with pytest.raises(LeaseTimeout):
        broker.acquire(
            LeaseRequest("restart", [], nodes=["w1", "w2"], avoid_marked=True), timeout=0.2
        )
    marks_clock.sleep(61)  # once the mark expires, w1 is granted
    lease = broker.acquire(
        LeaseRequest("restart", [], nodes=["w1", "w2"], avoid_marked=True), timeout=5
    )
    assert lease.node == "w1" and no_kubelet_restart(FileLeaseBook(tmp_path), "w1") is None
    broker.release(other)


def test_restarts_kubelet_is_parsed_and_checked() -> None:
    item = _item(("dra_node_exclusive", (), {"restarts_kubelet": True}))
    assert parse_node_exclusive(item) == (NodeExclusive(restarts_kubelet=True), [])
    bad = _item(("dra_node_exclusive", (), {"restarts_kubelet": "yes"}))
    assert parse_node_exclusive(bad)[1] == [
        "scenarios/x/test_x.py::test_x: dra_node_exclusive(restarts_kubelet='yes'): True or False"
    ]


def test_a_short_test_backfills_while_a_waiter_waits_for_a_long_holder(tmp_path: Path) -> None:
    broker = _pin_broker(tmp_path)
    reboot = broker.acquire(LeaseRequest("reboot", [], nodes=["a"], expected_s=120), timeout=1)
    got: dict[str, str | None] = {}

    def wait_for_node() -> None:
        # wants a whole, with a replacement that may land on b: it keeps b free of node leases
        lease = _pin_broker(tmp_path).acquire(
            LeaseRequest("drain", [DeviceNeed("default")], nodes=["a"], expected_s=30), timeout=30
        )
        got["node"] = lease.node

    waiter = threading.Thread(target=wait_for_node)
    waiter.start()
    _await_entry(broker, "drain", "reserved")
    # 10 s (x1.5 + 5 s) ends well before the reboot's 120 s: it may take b meanwhile
    short = broker.acquire(LeaseRequest("short", [], nodes=["b"], expected_s=10), timeout=1)
    assert short.node == "b"
    broker.release(short)
    # 100 s would not end before the reboot does, nor may a test of unknown duration go
    for expected in (100, None):
        with pytest.raises(LeaseTimeout):
            broker.acquire(LeaseRequest("long", [], nodes=["b"], expected_s=expected), timeout=0.2)
    broker.release(reboot)
    waiter.join(30)
    assert got == {"node": "a"}


def test_an_exclusive_waiter_lets_later_tests_pass_for_a_while(tmp_path: Path) -> None:
    broker = _pin_broker(tmp_path)
    held = broker.acquire(LeaseRequest("t1", [DeviceNeed("default")], pin=True), timeout=1)
    got: dict[str, bool] = {}

    def wait_alone() -> None:
        got["exclusive"] = (
            _pin_broker(tmp_path)
            .acquire(LeaseRequest("upd", [], exclusive=True), timeout=30)
            .exclusive
        )

    waiter = threading.Thread(target=wait_alone)
    waiter.start()
    _await_entry(broker, "upd")
    # still within its patience: a test queued on another worker goes first
    broker.release(broker.acquire(LeaseRequest("t2", [DeviceNeed("default")], pin=True), timeout=1))
    broker.release(held)
    waiter.join(30)
    assert got == {"exclusive": True}


def _grant_order_after_an_exclusive_holder(tmp_path: Path) -> list[str]:
    """An exclusive test `upd` asks, then an ordinary `alloc`; both wait for the exclusive
    holder t1. The order in which they get the devices once t1 lets go."""
    broker = _pin_broker(tmp_path)
    held = broker.acquire(LeaseRequest("t1", [DeviceNeed("default")], exclusive=True), timeout=1)
    order: list[str] = []

    def wait(name: str, exclusive: bool) -> None:
        lease = _pin_broker(tmp_path).acquire(
            LeaseRequest(name, [DeviceNeed("default")], exclusive=exclusive, pin=not exclusive),
            timeout=30,
        )
        order.append(name)
        time.sleep(0.3)
        broker.release(lease)

    threads: list[threading.Thread] = []
    for name, exclusive in (("upd", True), ("alloc", False)):
        threads.append(threading.Thread(target=wait, args=(name, exclusive)))
        threads[-1].start()
        _await_entry(broker, name)
    broker.release(held)
    for thread in threads:
        thread.join(30)
    return order


def test_an_exclusive_waiter_within_its_patience_leaves_the_devices_to_an_ordinary_waiter(
    tmp_path: Path,
) -> None:
    # the exclusive one asked first, but the ordinary one goes first
    assert _grant_order_after_an_exclusive_holder(tmp_path) == ["alloc", "upd"]


def test_an_exclusive_waiter_past_its_patience_goes_before_later_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lease_module, "EXCLUSIVE_PATIENCE_S", 0.0)
    assert _grant_order_after_an_exclusive_holder(tmp_path) == ["upd", "alloc"]


def test_grants_and_releases_are_journaled_with_their_node(tmp_path: Path) -> None:
    broker = _nodes_broker(tmp_path)
    lease = broker.acquire(LeaseRequest("drains a node", [], nodes=["w2"]), timeout=1)
    broker.release(lease)
    lines = [json.loads(x) for x in (tmp_path / JOURNAL_FILE).read_text().splitlines()]
    assert [(x["event"], x["holder"], x["node"], x["scope"]) for x in lines] == [
        ("grant", "drains a node", "w2", "whole"),
        ("release", "drains a node", "w2", "whole"),
    ]
    assert lines[0]["waited_s"] >= 0 and lines[0]["t"] <= lines[1]["t"]


def test_reclaim_drops_a_dead_workers_leases_at_once_and_journals_them(tmp_path: Path) -> None:
    book = FileLeaseBook(tmp_path)
    broker = _nodes_broker(tmp_path)
    mine = broker.acquire(LeaseRequest("mine", [DeviceNeed("small")]), timeout=1)
    dead_owner = f"{book.owner}/dead-worker"  # this process's pid: it would never expire

    def add_dead(state: lease_book_module.BookState) -> int:
        entry = broker.policy.entry_for(LeaseRequest("dead's", [DeviceNeed("big")]), since=0.0)
        entry.owner, entry.state = dead_owner, "held"
        return state.add(entry)

    book.update(add_dead)
    assert sorted(h["holder"] for h in broker.holders()) == ["dead's", "mine"]
    assert reclaim(book, dead_owner) == ["dead's"]
    assert [h["holder"] for h in broker.holders()] == ["mine"]
    lines = [json.loads(x) for x in (tmp_path / JOURNAL_FILE).read_text().splitlines()]
    assert (lines[-1]["event"], lines[-1]["holder"]) == ("release", "dead's")
    broker.release(mine)
