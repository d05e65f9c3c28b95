"""Which test an xdist worker gets next: lease-aware load scheduling.

xdist's load scheduling hands out tests in the run's order (`markers.run_order`: the
node-exclusive tests first) and keeps two queued on every worker. With more workers than nodes
that can be leased whole, the surplus workers then sit in lease waits for a node, with ordinary
tests queued behind them, while those tests could run beside the node-exclusive ones (a
measured timeline: with -n 4 on two nodes, no ordinary test started before 290 s). This scheduler
keeps the run's order but:

- sends a whole-node test only while every whole-node test sent and not finished, it
  included, can have a node of its own among the nodes it may lease (its candidates, less
  the nodes marked "no kubelet restart" for a test that restarts a kubelet), and one node
  fewer while tests pinned to a node are still to go, so those always have a node to run on
  (a measured timeline: five tests that could only lease the second worker were sent at once,
  and the first worker stood idle for 30 s while all four workers waited for the second);
- sends a whole-node test that also leases devices off its node (a drain's replacements) only
  while no other whole-node test is in flight, and no whole-node test beside it: such a lease
  conflicts with a whole-node lease of any other node (a measured timeline: a drain sent beside
  a node restart of the other worker waited 35 s, two more whole-node tests queued behind it,
  and the first worker stood idle all that time);
- sends a test whose devices may be on any node only once every whole-node test was sent (it
  waits until no node of its is leased whole, and holds back whole-node leases meanwhile);
- sends a cluster-wide exclusive test only when nothing else is left (it waits for every other
  lease, and every later request queues behind it);
- still fills every worker's queue to two tests when nothing else may go: an xdist worker
  starts a test only once it holds the next one (or was told to stop), so a queue of one would
  never run. It then sends the whole-node test whose nodes are least in demand, else the first
  in the run's order.

It also keeps every worker's queue at two tests (the one running and the next): xdist sends
up to a quarter of a worker's share at first and refills to half of it, so a whole-node test
sent to a worker waited behind several queued ordinary tests while its node stood idle
(a measured timeline: 12 s between two whole-node leases of one node).

The controller does not collect under xdist, so the workers write which tests are which
(`conformance.plugin.lanes`) into the run's harness directory when they have sorted their
collection.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadScheduling

from conformance.plugin.lanes import LANE_NAMES, Lanes, read_lanes
from conformance.run.lease_book import LeaseBook
from conformance.run.node_marks import marked_nodes

QUEUE_DEPTH = 2  # tests sent to a worker and not finished: the fewest it can run with


def _lane(nodeid: str, lanes: Lanes) -> str:
    """The lane of a test: one of LANE_NAMES, or "pinned" (devices on one node)."""
    return next((name for name in LANE_NAMES if nodeid in getattr(lanes, name)), "pinned")


def _nodes_of(
    nodeid: str, lanes: Lanes, nodes: Sequence[str], marked: Collection[str]
) -> list[str]:
    """The nodes a whole-node test may lease now (its candidates, else any node); a test that
    restarts a kubelet skips marked nodes, unless every one is marked (it then waits)."""
    allowed = [n for n in lanes.candidates.get(nodeid, nodes) if n in nodes] or list(nodes)
    if nodeid in lanes.restarts_kubelet:
        return [n for n in allowed if n not in marked] or allowed
    return allowed


def _matched(wants: Sequence[Sequence[str]], per_node: int) -> bool:
    """Can every test get one of its nodes, with at most `per_node` tests on a node?
    (Augmenting paths; a handful of tests and nodes.)"""
    taken: dict[tuple[str, int], int] = {}

    def place(test: int, seen: set[tuple[str, int]]) -> bool:
        for node in wants[test]:
            for slot in range(per_node):
                key = (node, slot)
                if key in seen:
                    continue
                seen.add(key)
                if key not in taken or place(taken[key], seen):
                    taken[key] = test
                    return True
        return False

    return all(place(test, set()) for test in range(len(wants)))


def _placeable(wants: Sequence[Sequence[str]], spanning: bool, per_node: int) -> bool:
    """`_matched`, where a set with a spanning test (one that also leases devices off its
    node) pairs with nothing: all of it must fit one after another on a node's slots."""
    if spanning and len(wants) > per_node:
        return False
    return _matched(wants, per_node)


def pick_next(
    pending: Sequence[str],
    lanes: Lanes,
    whole_node_in_flight: Sequence[str],
    nodes: Sequence[str],
    must_send: bool,
    marked: Collection[str] = (),
) -> int | None:
    """The position in `pending` of the test to send next to a worker, or None to send it
    nothing now (never when `must_send`: the worker's queue is shorter than two).

    `whole_node_in_flight`: the whole-node tests sent and not finished; `nodes`: the nodes a
    test may lease whole; `marked`: those with a "no kubelet restart" mark now."""
    lane = [_lane(p, lanes) for p in pending]
    flying = [_nodes_of(t, lanes, nodes, marked) for t in whole_node_in_flight]
    flying_spans = any(t in lanes.spanning for t in whole_node_in_flight)
    # While tests pinned to one node are still to go, one node stays free of whole-node leases
    # for them: with every node leased whole, no such test can run.
    slots = len(nodes)
    if "pinned" in lane and slots > 1:
        slots -= 1
    for position, name in enumerate(lane):
        if name == "whole_node":
            wants = [*flying, _nodes_of(pending[position], lanes, nodes, marked)]
            spans = flying_spans or pending[position] in lanes.spanning
            if len(wants) <= slots and _placeable(wants, spans, 1):
                return position
        elif name == "anywhere":
            if "whole_node" not in lane:
                return position
        elif name == "cluster_wide":
            if all(n == "cluster_wide" for n in lane):
                return position
        else:
            return position
    if not (pending and must_send):
        return None
    # Forced: the whole-node test that piles up least on the nodes it can lease.
    best, best_depth = 0, None
    for position, name in enumerate(lane):
        if name != "whole_node":
            continue
        wants = [*flying, _nodes_of(pending[position], lanes, nodes, marked)]
        spans = flying_spans or pending[position] in lanes.spanning
        depth = next(d for d in range(1, len(wants) + 1) if _placeable(wants, spans, d))
        if best_depth is None or depth < best_depth:
            best, best_depth = position, depth
    return best


class LeaseAwareScheduling(LoadScheduling):
    """xdist's LoadScheduling with `pick_next` choosing what to send."""

    def __init__(
        self,
        config: Any,
        log: Any = None,
        *,
        harness_dir: Path,
        nodes: Sequence[str],
        book: LeaseBook | None = None,
    ) -> None:
        super().__init__(config, log)
        self._harness_dir = harness_dir
        self._nodes = list(nodes) or ["node"]
        self._book = book  # the lease book: its "no kubelet restart" marks
        self._lanes: Lanes | None = None

    def _marked(self) -> set[str]:
        """Nodes with a no-kubelet-restart mark now; none known if the book does not answer
        (the broker still keeps a kubelet-restarting test off a marked node)."""
        if self._book is None:
            return set()
        try:
            return marked_nodes(self._book)
        except Exception as exc:  # noqa: BLE001 - only the order of tests depends on it
            logging.getLogger(__name__).warning("lease book: node marks unread: %s", exc)
            return set()

    def _lanes_known(self) -> Lanes:
        if self._lanes is None:  # written by the workers before their collection finished
            self._lanes = read_lanes(self._harness_dir)
        return self._lanes

    def _nodeid(self, index: int) -> str:
        assert self.collection is not None
        return self.collection[index]

    def _whole_node_in(self, indices: Collection[int]) -> list[str]:
        lanes = self._lanes_known()
        return [n for i in indices if (n := self._nodeid(i)) in lanes.whole_node]

    def _send_tests(self, node: Any, num: int) -> None:
        lanes = self._lanes_known()
        marked = self._marked()
        queued = self.node2pending[node]
        chosen: list[int] = []
        for _ in range(min(num, QUEUE_DEPTH - len(queued))):
            in_flight = [t for p in self.node2pending.values() for t in self._whole_node_in(p)]
            position = pick_next(
                [self._nodeid(i) for i in self.pending],
                lanes,
                in_flight + self._whole_node_in(chosen),
                self._nodes,
                must_send=len(queued) + len(chosen) < QUEUE_DEPTH,
                marked=marked,
            )
            if position is None:
                break
            chosen.append(self.pending.pop(position))
        if chosen:
            queued.extend(chosen)
            node.send_runtest_some(chosen)
