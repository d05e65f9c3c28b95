"""Guarded needs of the device lease (`DeviceNeed.guard`): the devices a guarded need may be
allocated are the lease's alone, so a reuse probe gets the released device itself."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from helpers.file_lease_book import FileLeaseBook

from conformance.kube.waits import wait_until
from conformance.plugin.markers import (
    ItemView,
    parse_devices,
)
from conformance.run.lease import DeviceLeaseBroker, DeviceNeed, LeaseRequest, LeaseTimeout

# Two nodes of two devices each; "first" and "second" split each node's devices between them.
SETS = {
    "default": frozenset({"a/1", "a/2", "b/1", "b/2"}),
    "first": frozenset({"a/1", "b/1"}),
    "second": frozenset({"a/2", "b/2"}),
}
NODES = {"a/1": "a", "a/2": "a", "b/1": "b", "b/2": "b"}


def _broker(tmp_path: Path) -> DeviceLeaseBroker:
    return DeviceLeaseBroker(FileLeaseBook(tmp_path), SETS, device_nodes=NODES, poll_interval=0.02)


def test_a_guarded_lease_keeps_every_device_its_pods_may_get_from_other_tests(
    tmp_path: Path,
) -> None:
    broker = _broker(tmp_path)
    probe = broker.acquire(
        LeaseRequest("reuse", [DeviceNeed("default", guard=True)], pin=True), timeout=1
    )
    assert probe.node == "a" and probe.guarded == {"a/1", "a/2"}
    # By counts a/2 is free, but a pod of another test pinned to a could be allocated the
    # device the reuse test releases (or a look-alike its probe asks for): it goes to b.
    other = broker.acquire(LeaseRequest("other", [DeviceNeed("default")], pin=True), timeout=1)
    assert other.node == "b" and other.guarded == frozenset()
    assert (
        broker.acquire(LeaseRequest("third", [DeviceNeed("default")], pin=True), timeout=1).node
        == "b"
    )
    with pytest.raises(LeaseTimeout, match=r"held by: reuse .*default×1 \(on node a\)"):
        broker.acquire(LeaseRequest("fourth", [DeviceNeed("default")], pin=True), timeout=0.2)
    # unpinned, its pods could land on a as well
    with pytest.raises(LeaseTimeout):
        broker.acquire(LeaseRequest("anywhere", [DeviceNeed("second")]), timeout=0.2)
    broker.release(probe)
    assert (
        broker.acquire(LeaseRequest("fourth", [DeviceNeed("default")], pin=True), timeout=1).node
        == "a"
    )


def test_a_guarded_lease_runs_beside_leases_of_devices_it_cannot_get(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    probe = broker.acquire(
        LeaseRequest("reuse", [DeviceNeed("first", guard=True)], pin=True), timeout=1
    )
    assert probe.node == "a" and probe.guarded == {"a/1"}
    # a default lease pinned to b reaches b/1 and b/2 only: it does not wait
    assert (
        broker.acquire(LeaseRequest("on-b", [DeviceNeed("default")], pin=True), timeout=1).node
        == "b"
    )
    # a/2 is no device the guarded need may get
    assert (
        broker.acquire(LeaseRequest("beside", [DeviceNeed("second")], pin=True), timeout=1).node
        == "a"
    )


def test_a_guarded_lease_waits_for_the_tests_that_could_get_its_devices(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    on_a = broker.acquire(LeaseRequest("t1", [DeviceNeed("default")], pin=True), timeout=1)
    on_b = broker.acquire(LeaseRequest("t2", [DeviceNeed("default")], pin=True), timeout=1)
    assert (on_a.node, on_b.node) == ("a", "b")
    # a and b each have a device free by count, yet another test could get it
    with pytest.raises(LeaseTimeout):
        broker.acquire(
            LeaseRequest("reuse", [DeviceNeed("default", guard=True)], pin=True), timeout=0.2
        )


def test_a_waiting_guarded_lease_reserves_a_node_and_later_tests_use_the_other(
    tmp_path: Path,
) -> None:
    broker = _broker(tmp_path)
    on_a = broker.acquire(LeaseRequest("t1", [DeviceNeed("default")], pin=True), timeout=1)
    on_b = broker.acquire(LeaseRequest("t2", [DeviceNeed("default")], pin=True), timeout=1)
    got: dict[str, object] = {}

    def wait_guarded() -> None:
        lease = _broker(tmp_path).acquire(
            LeaseRequest("reuse", [DeviceNeed("default", guard=True)], pin=True), timeout=30
        )
        got.update(node=lease.node, guarded=lease.guarded)

    waiter = threading.Thread(target=wait_guarded)
    waiter.start()
    wait_until(
        broker.holders,
        lambda book: any(e["holder"] == "reuse" and e.get("reserved") for e in book),
        describe="the guarded waiter's reservation",
        timeout=60,
        interval=0.01,
    )
    reserved = {e["holder"]: e.get("reserved") for e in broker.holders()}["reuse"]
    free = "b" if reserved == "a" else "a"
    # a later test is not granted the reserved node, so the waiter is not starved there...
    late = broker.acquire(LeaseRequest("late", [DeviceNeed("default")], pin=True), timeout=1)
    assert late.node == free
    # ...and the waiter gets it once its holder leaves
    broker.release(on_a if reserved == "a" else on_b)
    waiter.join(30)
    assert got == {"node": reserved, "guarded": {f"{reserved}/1", f"{reserved}/2"}}


def test_a_guarded_lease_across_nodes_guards_its_kind_everywhere(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    probe = broker.acquire(LeaseRequest("reuse", [DeviceNeed("first", 2, guard=True)]), timeout=1)
    assert probe.node is None and probe.guarded == {"a/1", "b/1"}
    assert broker.acquire(LeaseRequest("second", [DeviceNeed("second")], pin=True), timeout=1).node
    with pytest.raises(LeaseTimeout):
        broker.acquire(LeaseRequest("default", [DeviceNeed("default")], pin=True), timeout=0.2)


def test_a_node_leased_whole_guards_its_devices(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    whole = broker.acquire(LeaseRequest("drain", [], nodes=["b"]), timeout=1)
    assert whole.guarded == {"b/1", "b/2"}


def _item(kwargs: dict) -> ItemView:
    path = Path("scenarios/x/test_x.py")
    return ItemView(f"{path}::test_x", path, [("dra_devices", ("default",), kwargs)])


def test_the_guard_flag_is_parsed_and_checked() -> None:
    assert parse_devices(_item({"guard": True}), SETS)[0] == [DeviceNeed("default", guard=True)]
    assert parse_devices(_item({}), SETS)[0] == [DeviceNeed("default")]
    assert parse_devices(_item({"guard": "yes"}), SETS)[2] == [
        "scenarios/x/test_x.py::test_x: dra_devices('default', guard=...): guard must be True "
        "or False"
    ]
