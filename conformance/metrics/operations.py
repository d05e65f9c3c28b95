"""Two snapshots -> what the run cost: per driver and gRPC method (the kubelet's calls to the
driver), per kubelet DRA operation and per scheduler extension point of the DynamicResources
plugin: count, errors, mean and p50/p95/p99 from the buckets (each "≤ bucket bound").

Every source's counters are summed over all its reads, across resets (a kubelet the suite
restarted counts from zero again): conformance.metrics.increase. Each reset is named.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from conformance.metrics.histogram import HistogramSeries, bucket_quantile, merged
from conformance.metrics.increase import Read, Reset, source_increase, source_resets
from conformance.metrics.scrape import (
    CLAIM_CONTROLLER,
    CLAIMS_IN_USE,
    CONTROLLER_MANAGER,
    GRPC,
    OPERATIONS,
    SCHEDULER,
    SCHEDULER_PLUGIN,
    Snapshot,
)
from conformance.metrics.timeline import load_timeline

QUANTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
QUANTILE_NOTE = (
    "from histogram buckets: {le: B} means at most B seconds (the upper bound of the bucket "
    "holding that rank), {gt: B} beyond the last bucket"
)
SCHEDULER_NOTE = "the scheduler records plugin durations for a sample of its cycles (about 10%)"
DRA_PLUGIN = "DynamicResources"
COUNTED_FAMILIES = (GRPC, OPERATIONS, SCHEDULER_PLUGIN)

Key = tuple[str, ...]
KeyOf = Callable[[HistogramSeries], Key | None]


def driver_operations(
    start: Snapshot, end: Snapshot, between: Sequence[Snapshot] = ()
) -> dict[str, Any]:
    """summary.json's `driver_operations` from the run's first and last snapshot and the reads
    taken in between (periodic ones of every kubelet, and one kubelet's right before and after
    each restart the suite caused): each source's counters are summed across its resets."""
    snapshots = sorted([start, *between, end], key=lambda s: s.taken)
    reads = reads_by_source(snapshots)
    resets = [
        reset
        for source, source_reads in sorted(reads.items())
        for reset in source_resets(source, source_reads, COUNTED_FAMILIES)
    ]
    grpc = _rows(reads, GRPC, _grpc_key, _grpc_error, resets)
    kubelet_ops = _rows(reads, OPERATIONS, _operation_key, _operation_error, resets)
    scheduler = _rows(reads, SCHEDULER_PLUGIN, _scheduler_key, _scheduler_error, resets)
    read_scheduler = any(s.startswith(SCHEDULER.name) for s in end.sources)
    sources = _sources(start, end)
    unavailable = _unavailable_sections(sources, read_scheduler, {**start.remedies, **end.remedies})
    read_kubelets = "grpc" not in unavailable
    return {
        "window": {
            "start": utc_iso(start.taken),
            "end": utc_iso(end.taken),
            "duration_s": round(end.taken - start.taken, 3),
        },
        "reads": _read_counts(snapshots),
        "quantiles": QUANTILE_NOTE,
        "sources": sources,
        "grpc": [_row(("driver", "method"), k, v) for k, v in grpc] if read_kubelets else None,
        "kubelet_operations": [_row(("operation",), k, v) for k, v in kubelet_ops]
        if read_kubelets
        else None,
        "scheduler": [_row(("extension_point",), k, v) for k, v in scheduler]
        if read_scheduler
        else None,
        "scheduler_note": SCHEDULER_NOTE if read_scheduler else None,
        "claims_in_use": _claims_in_use(start, end),
        "claim_controller": _claim_controller(start, end),
        "counter_resets": [reset.describe() for reset in resets],
        "timeline": load_timeline([s for s in snapshots if not s.partial], reads, resets),
        "unavailable": unavailable,
    }


def reads_by_source(snapshots: Sequence[Snapshot]) -> dict[str, list[Read]]:
    """Each source's reads in time order (a snapshot that could not read it is left out)."""
    out: dict[str, list[Read]] = {}
    for snapshot in sorted(snapshots, key=lambda s: s.taken):
        for source, metrics in snapshot.sources.items():
            out.setdefault(source, []).append(Read(snapshot.taken, metrics))
    return out


def _read_counts(snapshots: Sequence[Snapshot]) -> dict[str, int]:
    partial = sum(1 for s in snapshots if s.partial)
    return {"whole": len(snapshots) - partial, "around_restarts": partial}


def _unavailable_sections(
    sources: dict[str, str], read_scheduler: bool, remedies: dict[str, str]
) -> dict[str, str]:
    """Why a section has no figures at all (a section absent here was read): no kubelet read at
    both ends leaves no gRPC call and no kubelet operation measured, which is not zero calls. A
    component its arguments keep unread says which to set (`remedies`)."""
    out = {}
    kubelets = {s: state for s, state in sources.items() if s.startswith("kubelet")}
    if not any(state == "read" for state in kubelets.values()):
        first = next(iter(sorted(kubelets.items())), None)
        why = f"{first[0]}: {first[1]}" if first else "no node to read a kubelet on"
        if len(kubelets) > 1:
            why += f" (and {len(kubelets) - 1} more kubelet source(s) alike)"
        out["grpc"] = out["kubelet_operations"] = why
    if not read_scheduler:
        out["scheduler"] = _component_unread(SCHEDULER.name, sources, remedies)
    managers = [state for s, state in sources.items() if s.startswith(CONTROLLER_MANAGER.name)]
    if managers and "read" not in managers:  # none: the run did not ask for it
        out["claim_controller"] = _component_unread(CONTROLLER_MANAGER.name, sources, remedies)
    return out


def _component_unread(component: str, sources: dict[str, str], remedies: dict[str, str]) -> str:
    """The component's first source and its state, and what to enable where the component's
    arguments are the cause."""
    unread = sorted(s for s in sources if s.startswith(component))
    if not unread:
        return f"{component}: not read"
    why = f"{unread[0]}: {sources[unread[0]]}"
    return f"{why}; {remedies[unread[0]]}" if unread[0] in remedies else why


def not_available(why: str) -> dict[str, Any]:
    """The whole section when no figure could be taken."""
    return {"not_available": why}


def _rows(
    reads: dict[str, list[Read]],
    family: str,
    key_of: KeyOf,
    is_error: Callable[[HistogramSeries], bool],
    resets: Sequence[Reset],
) -> list[tuple[Key, dict[str, Any]]]:
    """Per key: the merged histogram of what every source counted, and the error count. A
    source read once only (at the start or the end) counted nothing measurable: said in
    `sources`, never counted from zero."""
    counted: dict[Key, list[HistogramSeries]] = {}
    errors: dict[Key, float] = {}
    for source, source_reads in sorted(reads.items()):
        for series in source_increase(source, source_reads, family, resets).values():
            key = key_of(series)
            if key is None:
                continue
            counted.setdefault(key, []).append(series)
            if is_error(series):
                errors[key] = errors.get(key, 0.0) + series.count
    rows = []
    for key in sorted(counted):
        total = merged(counted[key])
        if total is not None:
            rows.append((key, histogram_figures(total, errors.get(key, 0.0))))
    return rows


def histogram_figures(total: HistogramSeries, errors: float) -> dict[str, Any]:
    """count, errors, mean_s (exact: sum over count), p50/p95/p99 from the buckets, buckets."""
    figures: dict[str, Any] = {
        "count": int(round(total.count)),
        "errors": int(round(errors)),
        "mean_s": round(total.sum / total.count, 6) if total.count else None,
    }
    for name, q in QUANTILES:
        found = bucket_quantile(total, q)
        figures[name] = None if found is None else found.to_dict()
    figures["buckets"] = _bucket_counts(total)
    return figures


def _bucket_counts(total: HistogramSeries) -> dict[str, list[float]]:
    """{le: finite upper bounds, counts: calls per bucket, one more for beyond the last}."""
    bounds = [le for le, _ in total.buckets if math.isfinite(le)]
    cumulative = [n for _, n in total.buckets]
    counts = [int(round(n - prev)) for prev, n in zip([0.0, *cumulative], cumulative, strict=False)]
    return {"le": bounds, "counts": counts}


def _row(names: tuple[str, ...], key: Key, figures: dict[str, Any]) -> dict[str, Any]:
    return dict(zip(names, key, strict=True)) | figures


def _grpc_key(series: HistogramSeries) -> Key:
    # "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources": the API version apart
    return (series.label("driver_name"), series.label("method_name").rsplit("/", 1)[-1])


def _grpc_error(series: HistogramSeries) -> bool:
    return series.label("grpc_status_code") not in ("OK", "")


def _operation_key(series: HistogramSeries) -> Key:
    return (series.label("operation_name"),)


def _operation_error(series: HistogramSeries) -> bool:
    return series.label("is_error") == "true"


def _scheduler_key(series: HistogramSeries) -> Key | None:
    if series.label("plugin") != DRA_PLUGIN:
        return None
    return (series.label("extension_point"),)


def _scheduler_error(series: HistogramSeries) -> bool:
    return series.label("status") == "Error"


def _sources(start: Snapshot, end: Snapshot) -> dict[str, str]:
    """Each source: "read", or "not available (why)" at the start, the end or both."""
    out: dict[str, str] = {}
    for source in sorted(
        set(start.sources) | set(end.sources) | set(start.unavailable) | set(end.unavailable)
    ):
        if source in end.unavailable:
            out[source] = f"not available ({end.unavailable[source]})"
        elif source in start.unavailable:
            out[source] = f"not available at the start ({start.unavailable[source]})"
        elif source not in start.sources:
            out[source] = "not available at the start (appeared during the run)"
        elif source not in end.sources:
            out[source] = "not available at the end (gone during the run)"
        else:
            out[source] = "read"
    return out


def _claims_in_use(start: Snapshot, end: Snapshot) -> dict[str, dict[str, float | None]]:
    """Per driver: the claims the kubelets held prepared, summed over nodes, then and now."""

    def totals(snapshot: Snapshot) -> dict[str, float]:
        sums: dict[str, float] = {}
        for source, metrics in snapshot.sources.items():
            if not source.startswith("kubelet "):
                continue
            for sample in metrics.gauges.get(CLAIMS_IN_USE, []):
                driver = sample.label("driver_name")
                sums[driver] = sums.get(driver, 0.0) + sample.value
        return sums

    before, after = totals(start), totals(end)
    return {
        d: {"start": before.get(d), "end": after.get(d)} for d in sorted(set(before) | set(after))
    }


def _claim_controller(start: Snapshot, end: Snapshot) -> list[dict[str, Any]]:
    """The resource-claim controller's counters and gauges, then and now (when read)."""
    rows = []
    for source, metrics in sorted(end.sources.items()):
        earlier = start.sources.get(source)
        for family, samples in sorted(metrics.gauges.items()):
            if not family.startswith(CLAIM_CONTROLLER):
                continue
            before = {
                s.labels: s.value for s in (earlier.gauges.get(family, []) if earlier else [])
            }
            for sample in samples:
                rows.append(
                    {
                        "metric": family,
                        "labels": dict(sample.labels),
                        "start": before.get(sample.labels),
                        "end": sample.value,
                    }
                )
    return rows


def utc_iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
