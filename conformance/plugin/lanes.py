"""Which tests the lease-aware scheduler (conformance.plugin.scheduling) treats apart.

The controller does not collect under xdist: the workers write the lanes into the run's
harness directory when they have sorted their collection, and the controller's scheduler
reads them. Apart from the scheduler so that importing it (the CLI does, through the
plugin) does not import xdist before pytest loads it as a plugin.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LANES_FILE = "schedule-lanes.json"
LANE_NAMES = ("whole_node", "anywhere", "cluster_wide")


@dataclass(frozen=True)
class Lanes:
    whole_node: frozenset[str] = frozenset()  # node ids of run-early and node-exclusive tests
    anywhere: frozenset[str] = frozenset()  # devices on any node (across nodes, or all of a kind)
    cluster_wide: frozenset[str] = frozenset()  # node ids of cluster-wide exclusive tests
    # The nodes each whole-node test may lease (absent: any node), and those that restart a
    # kubelet (they never get a node marked "no kubelet restart").
    candidates: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    restarts_kubelet: frozenset[str] = frozenset()
    # Whole-node tests that also lease devices off their node: they pair with no other.
    spanning: frozenset[str] = frozenset()


def write_lanes(harness_dir: Path, lanes: Lanes) -> None:
    harness_dir.mkdir(parents=True, exist_ok=True)
    document: dict[str, Any] = {name: sorted(getattr(lanes, name)) for name in LANE_NAMES}
    document["candidates"] = {k: list(v) for k, v in sorted(lanes.candidates.items())}
    document["restarts_kubelet"] = sorted(lanes.restarts_kubelet)
    document["spanning"] = sorted(lanes.spanning)
    tmp = harness_dir / f"{LANES_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(document))
    os.replace(tmp, harness_dir / LANES_FILE)


def read_lanes(harness_dir: Path) -> Lanes:
    try:
        document = json.loads((harness_dir / LANES_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return Lanes()  # no lanes known: plain load scheduling in the run's order
    return Lanes(
        **{name: frozenset(document.get(name, ())) for name in LANE_NAMES},
        candidates={k: tuple(v) for k, v in (document.get("candidates") or {}).items()},
        restarts_kubelet=frozenset(document.get("restarts_kubelet", ())),
        spanning=frozenset(document.get("spanning", ())),
    )
