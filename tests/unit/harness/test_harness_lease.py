"""The device lease, across real processes sharing one state directory."""

from __future__ import annotations

import multiprocessing
import os
import re
import time
from pathlib import Path

import pytest

from conformance.lease import ALL, DeviceLeaseBroker, DeviceNeed, LeaseError, LeaseTimeout

SETS = {
    "default": frozenset({"w1/a", "w1/b", "w2/c"}),
    "big": frozenset({"w1/a"}),
    "small": frozenset({"w1/b", "w2/c"}),
    "weird": None,  # a selector beyond the local evaluator
}
CTX = multiprocessing.get_context("fork")


def _hold(
    state_dir: str,
    holder: str,
    kind: str,
    count: int | str,
    exclusive: bool,
    hold_s: float,
    delay_s: float,
    queue: multiprocessing.Queue,
) -> None:
    time.sleep(delay_s)
    broker = DeviceLeaseBroker(Path(state_dir), SETS, poll_interval=0.02)
    needs = [DeviceNeed(kind, count)] if kind else []
    with broker.lease(holder, needs, exclusive=exclusive, timeout=30):
        start = time.monotonic()
        time.sleep(hold_s)
        end = time.monotonic()
    queue.put((holder, start, end))


def _run(
    tmp_path: Path, specs: list[tuple[str, str, int | str, bool, float, float]]
) -> dict[str, tuple[float, float]]:
    queue: multiprocessing.Queue = CTX.Queue()
    procs = [CTX.Process(target=_hold, args=(str(tmp_path), *spec, queue)) for spec in specs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    results = [queue.get(timeout=5) for _ in specs]
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
    spans = _run(tmp_path, [(f"t{i}", "small", 1, False, 0.3, 0.0) for i in range(6)])
    # Two small devices: two at a time, never three, and really in parallel.
    assert _max_overlap(list(spans.values())) == 2


def test_exclusive_holds_alone(tmp_path: Path) -> None:
    specs = [("excl", "", 1, True, 0.4, 0.05)]
    specs += [(f"t{i}", "small", 1, False, 0.2, 0.0) for i in range(4)]
    spans = _run(tmp_path, specs)
    ex_start, ex_end = spans.pop("excl")
    for start, end in spans.values():
        assert end <= ex_start or start >= ex_end


def test_an_exclusive_waiter_is_not_overtaken(tmp_path: Path) -> None:
    spans = _run(
        tmp_path,
        [
            ("first", "small", 1, False, 0.8, 0.0),
            ("excl", "", 1, True, 0.2, 0.2),
            ("late", "small", 1, False, 0.1, 0.45),  # would fit beside "first", but excl is waiting
        ],
    )
    assert spans["excl"][0] >= spans["first"][1]
    assert spans["late"][0] >= spans["excl"][1]


def test_a_dead_holder_does_not_wedge_the_run(tmp_path: Path) -> None:
    def die_holding() -> None:
        DeviceLeaseBroker(tmp_path, SETS).acquire("doomed", [DeviceNeed("big")], timeout=5)
        os._exit(0)  # no release

    p = CTX.Process(target=die_holding)
    p.start()
    p.join(30)
    broker = DeviceLeaseBroker(tmp_path, SETS, poll_interval=0.02)
    assert [h["holder"] for h in broker.holders()] == []  # the dead entry is dropped
    lease = broker.acquire("next", [DeviceNeed("big")], timeout=1)
    assert lease.waited_s < 1


def test_default_lease_counts_against_the_kinds_it_overlaps(tmp_path: Path) -> None:
    broker = DeviceLeaseBroker(tmp_path, SETS, poll_interval=0.02)
    held = broker.acquire("holder-a", [DeviceNeed("big")], timeout=1)
    # A default claim might land on the only big device: it must wait.
    with pytest.raises(LeaseTimeout) as err:
        broker.acquire("tests/x.py::test_b", [DeviceNeed("default")], timeout=0.2)
    assert re.match(
        r"tests/x.py::test_b: gave up after \ds waiting for devices default×1; "
        rf"held by: holder-a \(pid {os.getpid()}, big×1, \ds\)",
        str(err.value),
    )
    # The small devices are disjoint from big: no wait.
    broker.release(broker.acquire("small-user", [DeviceNeed("small", ALL)], timeout=0.2))
    broker.release(held)
    broker.release(broker.acquire("b", [DeviceNeed("default", 3)], timeout=0.2))
    assert broker.holders() == []


def test_unknown_kind_is_leased_alone(tmp_path: Path) -> None:
    broker = DeviceLeaseBroker(tmp_path, SETS, poll_interval=0.02)
    held = broker.acquire("a", [DeviceNeed("small")], timeout=1)
    with pytest.raises(LeaseTimeout):
        broker.acquire("b", [DeviceNeed("weird")], timeout=0.2)
    broker.release(held)
    broker.release(broker.acquire("b", [DeviceNeed("weird")], timeout=0.2))


def test_a_timed_out_waiter_leaves_no_trace(tmp_path: Path) -> None:
    broker = DeviceLeaseBroker(tmp_path, SETS, poll_interval=0.02)
    held = broker.acquire("a", [DeviceNeed("big")], timeout=1)
    with pytest.raises(LeaseTimeout):
        broker.acquire("b", [DeviceNeed("big")], exclusive=True, timeout=0.1)
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
            "unknown device kind 'huge'\n  -> use one of: big, default, small, weird",
        ),
        (DeviceNeed("big", 0), "device count for 'big' must be >= 1 or 'all', got 0"),
    ],
)
def test_impossible_requests_fail_at_once(tmp_path: Path, need: DeviceNeed, message: str) -> None:
    broker = DeviceLeaseBroker(tmp_path, SETS)
    with pytest.raises(LeaseError) as err:
        broker.acquire("x", [need], timeout=100)
    assert str(err.value) == message
