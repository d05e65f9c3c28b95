"""Which test an xdist worker gets next: lease-aware load scheduling.

xdist's load scheduling hands out tests in the run's order (`collection.run_order`: the
node-exclusive tests first) and keeps two queued on every worker. With more workers than nodes
that can be leased whole, the surplus workers then sit in lease waits for a node, with ordinary
tests queued behind them, while those tests could run beside the node-exclusive ones (session
14 timeline: with -n 4 on two nodes, no ordinary test started before 290 s). This scheduler
keeps the run's order but:

- sends a whole-node test only while fewer are sent and not finished than there are nodes to
  lease, and one fewer while tests pinned to a node are still to go, so those always have a
  node to run on;
- sends a test whose devices may be on any node only once every whole-node test was sent (it
  waits until no node of its is leased whole, and holds back whole-node leases meanwhile);
- sends a cluster-wide exclusive test only when nothing else is left (it waits for every other
  lease, and every later request queues behind it);
- still fills every worker's queue to two tests, in the run's order when nothing else may go:
  an xdist worker starts a test only once it holds the next one (or was told to stop), so a
  queue of one would never run.

The controller does not collect under xdist, so the workers write which tests are which
(`write_lanes`) into the run's harness directory when they have sorted their collection.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadScheduling

LANES_FILE = "schedule-lanes.json"
LANE_NAMES = ("whole_node", "anywhere", "cluster_wide")


@dataclass(frozen=True)
class Lanes:
    whole_node: frozenset[str] = frozenset()  # node ids of run-early and node-exclusive tests
    anywhere: frozenset[str] = frozenset()  # devices on any node (across nodes, or all of a kind)
    cluster_wide: frozenset[str] = frozenset()  # node ids of cluster-wide exclusive tests


def write_lanes(harness_dir: Path, lanes: Lanes) -> None:
    harness_dir.mkdir(parents=True, exist_ok=True)
    document = {name: sorted(getattr(lanes, name)) for name in LANE_NAMES}
    tmp = harness_dir / f"{LANES_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(document))
    os.replace(tmp, harness_dir / LANES_FILE)


def read_lanes(harness_dir: Path) -> Lanes:
    try:
        document = json.loads((harness_dir / LANES_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return Lanes()  # no lanes known: plain load scheduling in the run's order
    return Lanes(**{name: frozenset(document.get(name, ())) for name in LANE_NAMES})


def _lane(nodeid: str, lanes: Lanes) -> str:
    """The lane of a test: one of LANE_NAMES, or "pinned" (devices on one node)."""
    return next((name for name in LANE_NAMES if nodeid in getattr(lanes, name)), "pinned")


def pick_next(
    pending: Sequence[str],
    lanes: Lanes,
    whole_node_in_flight: int,
    whole_node_slots: int,
    must_send: bool,
) -> int | None:
    """The position in `pending` of the test to send next to a worker, or None to send it
    nothing now (never when `must_send`: the worker's queue is shorter than two)."""
    lane = [_lane(p, lanes) for p in pending]
    # While tests pinned to one node are still to go, one node stays free of whole-node leases
    # for them: with every node leased whole, no such test can run.
    slots = whole_node_slots
    if "pinned" in lane and whole_node_slots > 1:
        slots -= 1
    for position, name in enumerate(lane):
        if name == "whole_node":
            if whole_node_in_flight < slots:
                return position
        elif name == "anywhere":
            if "whole_node" not in lane:
                return position
        elif name == "cluster_wide":
            if all(n == "cluster_wide" for n in lane):
                return position
        else:
            return position
    return 0 if pending and must_send else None


class LeaseAwareScheduling(LoadScheduling):
    """xdist's LoadScheduling with `pick_next` choosing what to send."""

    def __init__(self, config: Any, log: Any = None, *, harness_dir: Path, slots: int) -> None:
        super().__init__(config, log)
        self._harness_dir = harness_dir
        self._slots = max(1, slots)
        self._lanes: Lanes | None = None

    def _lanes_known(self) -> Lanes:
        if self._lanes is None:  # written by the workers before their collection finished
            self._lanes = read_lanes(self._harness_dir)
        return self._lanes

    def _nodeid(self, index: int) -> str:
        assert self.collection is not None
        return self.collection[index]

    def _whole_node_in(self, indices: Collection[int]) -> int:
        lanes = self._lanes_known()
        return sum(1 for i in indices if self._nodeid(i) in lanes.whole_node)

    def _send_tests(self, node: Any, num: int) -> None:
        lanes = self._lanes_known()
        queued = self.node2pending[node]
        chosen: list[int] = []
        for _ in range(num):
            in_flight = sum(self._whole_node_in(p) for p in self.node2pending.values())
            position = pick_next(
                [self._nodeid(i) for i in self.pending],
                lanes,
                in_flight + self._whole_node_in(chosen),
                self._slots,
                must_send=len(queued) + len(chosen) < 2,
            )
            if position is None:
                break
            chosen.append(self.pending.pop(position))
        if chosen:
            queued.extend(chosen)
            node.send_runtest_some(chosen)
