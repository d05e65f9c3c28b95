"""The driver's load over the run, from the periodic reads of every kubelet: per step between
two reads, the NodePrepareResources and NodeUnprepareResources calls the kubelets made, the
calls that failed, and the claims the kubelets held prepared at the step's end."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.metrics.increase import Read, Reset, source_increase
from conformance.metrics.scrape import CLAIMS_IN_USE, GRPC, Snapshot

PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"
ANY_DRIVER = "<any>"  # the kubelet's gauge over all drivers


def load_timeline(
    snapshots: Sequence[Snapshot], reads: Mapping[str, Sequence[Read]], resets: Sequence[Reset]
) -> dict[str, Any]:
    """{"points": [{t_s, prepare, unprepare, errors, claims_in_use}, ...]}: one point per step
    between consecutive whole snapshots, `t_s` its end in seconds from the first. Every
    increase counted in the totals falls in exactly one step: the one holding its later read."""
    ordered = sorted(snapshots, key=lambda s: s.taken)
    if len(ordered) < 2:
        return {"points": []}
    first = ordered[0].taken
    points = []
    for earlier, later in zip(ordered, ordered[1:], strict=False):
        point = {"t_s": round(later.taken - first, 1), "prepare": 0, "unprepare": 0, "errors": 0}
        for source, source_reads in reads.items():
            if not source.startswith("kubelet "):
                continue
            # its last read up to the step's start, then its reads within the step: a kubelet
            # a whole read missed (restarting) is counted in the step that reads it again
            step = [r for r in source_reads if r.taken <= earlier.taken][-1:] + [
                r for r in source_reads if earlier.taken < r.taken <= later.taken
            ]
            for series in source_increase(source, step, GRPC, resets).values():
                method = series.label("method_name").rsplit("/", 1)[-1]
                calls = int(round(series.count))
                if method == PREPARE:
                    point["prepare"] += calls
                elif method == UNPREPARE:
                    point["unprepare"] += calls
                if series.label("grpc_status_code") not in ("OK", ""):
                    point["errors"] += calls
        point["claims_in_use"] = _claims_in_use(later)
        points.append(point)
    return {"points": points}


def _claims_in_use(snapshot: Snapshot) -> int:
    return int(
        sum(
            sample.value
            for source, metrics in snapshot.sources.items()
            if source.startswith("kubelet ")
            for sample in metrics.gauges.get(CLAIMS_IN_USE, [])
            if sample.label("driver_name") == ANY_DRIVER
        )
    )
