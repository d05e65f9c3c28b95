"""What the lease-aware xdist scheduler sends next (conformance.plugin.scheduling)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from conformance.plugin.lanes import Lanes, read_lanes, write_lanes
from conformance.plugin.scheduling import LeaseAwareScheduling, pick_next

LANES = Lanes(
    whole_node=frozenset({"drain", "restart"}),
    anywhere=frozenset({"spread"}),
    cluster_wide=frozenset({"update"}),
)
NODES = ["w1", "w2"]

# Two workers: "partition" only fits w2, "reboot"/"reboot2" restart a kubelet.
PLACED = Lanes(
    whole_node=frozenset({"drain", "taint", "partition", "reboot", "reboot2"}),
    cluster_wide=frozenset({"update"}),
    candidates={
        "drain": ("w1", "w2"),
        "taint": ("w1", "w2"),
        "partition": ("w2",),
        "reboot": ("w1", "w2"),
        "reboot2": ("w1", "w2"),
    },
    restarts_kubelet=frozenset({"reboot", "reboot2"}),
)


def test_a_whole_node_test_goes_out_while_a_node_is_free() -> None:
    assert pick_next(["restart", "spread"], LANES, ["drain"], NODES, must_send=False) == 0


def test_one_node_stays_free_of_whole_node_leases_while_pinned_tests_are_to_go() -> None:
    assert pick_next(["restart", "plain"], LANES, [], NODES, must_send=False) == 0
    assert pick_next(["restart", "plain"], LANES, ["drain"], NODES, must_send=False) == 1
    # once they are sent, every node may be leased whole
    assert pick_next(["restart", "update"], LANES, ["drain"], NODES, must_send=False) == 0
    # with one node, whole-node tests still go out
    assert pick_next(["restart", "plain"], LANES, [], ["w1"], must_send=False) == 0


def test_with_every_node_taken_an_ordinary_test_overtakes_the_whole_node_ones() -> None:
    in_flight = ["drain", "restart"]
    assert pick_next(["restart", "drain", "plain"], LANES, in_flight, NODES, False) == 2


def test_devices_anywhere_wait_until_every_whole_node_test_was_sent() -> None:
    in_flight = ["drain", "restart"]
    assert pick_next(["restart", "spread"], LANES, in_flight, NODES, must_send=False) is None
    assert pick_next(["spread", "update"], LANES, in_flight, NODES, must_send=False) == 0


def test_cluster_wide_tests_go_out_last() -> None:
    assert pick_next(["update", "plain"], LANES, [], NODES, must_send=False) == 1
    assert pick_next(["update", "spread"], LANES, [], NODES, must_send=False) == 1
    assert pick_next(["update"], LANES, [], NODES, must_send=False) == 0


def test_a_worker_with_a_queue_shorter_than_two_always_gets_a_test() -> None:
    in_flight = ["drain", "restart"]
    assert pick_next(["restart", "update"], LANES, in_flight, NODES, must_send=False) is None
    assert pick_next(["restart", "update"], LANES, in_flight, NODES, must_send=True) == 0
    assert pick_next(["update"], LANES, in_flight, NODES, must_send=True) == 0
    assert pick_next([], LANES, [], NODES, must_send=True) is None


def test_a_test_that_fits_only_a_node_another_is_bound_for_waits() -> None:
    # "partition" can only have w2, and "reboot" can only have w2 while w1 is marked
    assert pick_next(["partition"], PLACED, ["reboot"], NODES, False, marked={"w1"}) is None
    # a test that fits the other node goes instead
    assert pick_next(["partition", "taint"], PLACED, ["reboot"], NODES, False, {"w1"}) == 1
    # without the mark, reboot can take w1: partition fits beside it
    assert pick_next(["partition"], PLACED, ["reboot"], NODES, False) == 0


def test_forced_it_sends_the_test_whose_nodes_are_least_in_demand() -> None:
    # w2 is wanted by two tests already; "taint" may go to w1
    in_flight = ["partition", "reboot", "drain"]
    pending = ["reboot2", "taint"]
    assert pick_next(pending, PLACED, in_flight, NODES, True, marked={"w1"}) == 1
    # ties keep the run's order
    assert pick_next(["drain", "taint"], PLACED, ["drain", "taint"], NODES, True) == 0


def test_a_restarting_test_whose_nodes_are_all_marked_still_counts_on_them() -> None:
    assert pick_next(["reboot"], PLACED, [], NODES, False, marked={"w1", "w2"}) == 0
    assert pick_next(["reboot2"], PLACED, ["reboot"], NODES, False, {"w1", "w2"}) == 0


# "evict" drains its node and leases replacement devices off it.
SPANNING = Lanes(
    whole_node=frozenset({"evict", "taint", "taint2", "reboot"}),
    candidates={
        "evict": ("w1", "w2"),
        "taint": ("w1", "w2"),
        "taint2": ("w1", "w2"),
        "reboot": ("w2",),
    },
    spanning=frozenset({"evict"}),
)


def test_a_spanning_test_pairs_with_no_other_whole_node_test() -> None:
    # beside a restart of w2 a drain of w1 would wait for its replacements: the taint goes
    assert pick_next(["evict", "taint"], SPANNING, ["reboot"], NODES, False) == 1
    assert pick_next(["evict"], SPANNING, ["reboot"], NODES, False) is None
    # beside a drain, no whole-node test goes, though a node is free
    assert pick_next(["taint"], SPANNING, ["evict"], NODES, False) is None
    assert pick_next(["taint", "plain"], SPANNING, ["evict"], NODES, False) == 1
    # alone it goes
    assert pick_next(["evict", "taint"], SPANNING, [], NODES, False) == 0
    # forced with both nodes taken, the test that is not spanning goes: it waits for one node,
    # the drain for both
    assert pick_next(["evict", "taint2"], SPANNING, ["reboot", "taint"], NODES, True) == 1


def test_unknown_lanes_keep_the_runs_order(tmp_path: Path) -> None:
    assert read_lanes(tmp_path) == Lanes()
    assert pick_next(["restart", "update"], Lanes(), ["a"] * 9, NODES, must_send=False) == 0
    write_lanes(tmp_path, PLACED)
    assert read_lanes(tmp_path) == PLACED
    write_lanes(tmp_path, SPANNING)
    assert read_lanes(tmp_path) == SPANNING


class _Config:
    """What xdist's LoadScheduling reads of pytest's config: -n 2, no --maxschedchunk."""

    def getvalue(self, name: str) -> list[str]:
        assert name == "tx"
        return ["2*popen"]

    def getoption(self, name: str) -> None:
        assert name == "maxschedchunk"


class _Worker:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def test_a_worker_never_holds_more_than_two_tests(tmp_path: Path) -> None:
    # xdist alone sends 40 tests on 2 workers 5 at first (a quarter of a share) and refills
    # to 10: a whole-node test would wait behind them.
    collection = [f"t{i}" for i in range(40)]
    scheduler = LeaseAwareScheduling(_Config(), harness_dir=tmp_path, nodes=NODES)
    workers = [_Worker("gw0"), _Worker("gw1")]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    assert [len(w.sent) for w in workers] == [2, 2]
    done = 0
    while scheduler.pending:
        worker = workers[done % 2]
        scheduler.mark_test_complete(worker, scheduler.node2pending[worker][0], duration=3.0)
        done += 1
        assert all(len(scheduler.node2pending[w]) <= 2 for w in workers)
    assert sorted(workers[0].sent + workers[1].sent) == list(range(40))
