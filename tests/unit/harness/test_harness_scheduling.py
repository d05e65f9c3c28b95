"""What the lease-aware xdist scheduler sends next (conformance.plugin.scheduling)."""

from __future__ import annotations

from pathlib import Path

from conformance.plugin.scheduling import Lanes, pick_next, read_lanes, write_lanes

LANES = Lanes(
    whole_node=frozenset({"drain", "restart"}),
    anywhere=frozenset({"spread"}),
    cluster_wide=frozenset({"update"}),
)


def test_a_whole_node_test_goes_out_while_a_node_is_free() -> None:
    assert pick_next(["restart", "spread"], LANES, 1, 2, must_send=False) == 0


def test_one_node_stays_free_of_whole_node_leases_while_pinned_tests_are_to_go() -> None:
    assert pick_next(["restart", "plain"], LANES, 0, 2, must_send=False) == 0
    assert pick_next(["restart", "plain"], LANES, 1, 2, must_send=False) == 1
    # once they are sent, every node may be leased whole
    assert pick_next(["restart", "update"], LANES, 1, 2, must_send=False) == 0
    # with one node, whole-node tests still go out
    assert pick_next(["restart", "plain"], LANES, 0, 1, must_send=False) == 0


def test_with_every_node_taken_an_ordinary_test_overtakes_the_whole_node_ones() -> None:
    assert pick_next(["restart", "drain", "plain"], LANES, 2, 2, must_send=False) == 2


def test_devices_anywhere_wait_until_every_whole_node_test_was_sent() -> None:
    assert pick_next(["restart", "spread"], LANES, 2, 2, must_send=False) is None
    assert pick_next(["spread", "update"], LANES, 2, 2, must_send=False) == 0


def test_cluster_wide_tests_go_out_last() -> None:
    assert pick_next(["update", "plain"], LANES, 0, 2, must_send=False) == 1
    assert pick_next(["update", "spread"], LANES, 0, 2, must_send=False) == 1
    assert pick_next(["update"], LANES, 0, 2, must_send=False) == 0


def test_a_worker_with_a_queue_shorter_than_two_always_gets_the_first_test() -> None:
    assert pick_next(["restart", "update"], LANES, 2, 2, must_send=False) is None
    assert pick_next(["restart", "update"], LANES, 2, 2, must_send=True) == 0
    assert pick_next([], LANES, 0, 2, must_send=True) is None


def test_unknown_lanes_keep_the_runs_order(tmp_path: Path) -> None:
    assert read_lanes(tmp_path) == Lanes()
    assert pick_next(["restart", "update"], Lanes(), 9, 2, must_send=False) == 0
    write_lanes(tmp_path, LANES)
    assert read_lanes(tmp_path) == LANES
