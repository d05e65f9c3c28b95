"""The gate's comparison of what the driver cost on each side (pure): per driver operation, the
p95 latency of the two runs (summary.json's `driver_operations`), and a regression when the
later run's is more than a threshold above the earlier one's.

It is reported, never judged: a slower driver still conforms, so the gate's verdict stays the
requirements' alone. An operation with too few calls on a side, or a side whose figures could
not be read, is said so and not compared: a missing figure is never a zero.

Percentiles are estimated from the histogram buckets by linear interpolation inside the bucket
that holds the rank (as PromQL's histogram_quantile does); a rank in the +Inf bucket is only
known to be beyond the last bound, and is compared as that bound, at least.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

DEFAULT_THRESHOLD = 0.5  # p95 more than 50 % above the earlier run's
DEFAULT_MIN_SAMPLES = 5  # below it a p95 is the slowest of a handful of calls
QUANTILE = 0.95
# summary.json's driver_operations sections: (key, who measured, driver field, operation field)
SECTIONS = (
    ("grpc", "kubelet → driver (gRPC)", "driver", "method"),
    ("kubelet_operations", "kubelet DRA manager", None, "operation"),
    ("scheduler", "scheduler (DynamicResources)", None, "extension_point"),
)
METHOD_NOTE = (
    "p95 estimated from histogram buckets by linear interpolation (as PromQL "
    "histogram_quantile); '> B' is beyond the last bucket bound B"
)


class LatencyChange(StrEnum):
    REGRESSION = "regression"  # p95 above the earlier one's by more than the threshold
    NO_REGRESSION = "no regression"
    TOO_FEW_SAMPLES = "too few samples"
    NOT_AVAILABLE = "not available"
    NOT_COMPARABLE = "not comparable"  # both beyond the last bucket


@dataclass(frozen=True)
class Estimate:
    """A quantile in seconds; `beyond` when it is only known to exceed `seconds`."""

    seconds: float
    beyond: bool = False

    def text(self) -> str:
        return f"> {self.seconds:.3g} s" if self.beyond else f"{_seconds(self.seconds)}"


@dataclass(frozen=True)
class OperationLatency:
    count: int
    p50: Estimate | None
    p95: Estimate | None


@dataclass(frozen=True)
class LatencyRow:
    measured_by: str
    driver: str
    operation: str
    before: OperationLatency | None
    after: OperationLatency | None
    change: LatencyChange
    increase: float | None  # after / before - 1 of the p95, when compared
    note: str = ""

    @property
    def name(self) -> str:
        who = f"{self.driver} " if self.driver else ""
        return f"{self.measured_by}: {who}{self.operation}"


@dataclass(frozen=True)
class LatencyComparison:
    threshold: float
    min_samples: int
    rows: tuple[LatencyRow, ...]
    unavailable_before: str | None = None  # why the earlier run has no figures at all
    unavailable_after: str | None = None

    @property
    def regressions(self) -> tuple[LatencyRow, ...]:
        return tuple(r for r in self.rows if r.change is LatencyChange.REGRESSION)


def interpolated_quantile(buckets: Mapping[str, Sequence[float]], q: float) -> Estimate | None:
    """The q-quantile of summary.json's {le: finite bounds, counts: per bucket + one beyond};
    None when the histogram counted nothing."""
    bounds, counts = list(buckets.get("le") or ()), list(buckets.get("counts") or ())
    total = sum(counts)
    if total <= 0:
        return None
    rank, cumulative, lower = q * total, 0.0, 0.0
    for bound, count in zip(bounds, counts, strict=False):
        if count > 0 and cumulative + count >= rank - 1e-9:
            inside = (rank - cumulative) / count
            return Estimate(lower + (bound - lower) * min(max(inside, 0.0), 1.0))
        cumulative += count
        lower = bound
    return Estimate(bounds[-1] if bounds else 0.0, beyond=True)


def compare_latency(
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    threshold: float = DEFAULT_THRESHOLD,
    min_samples: int = DEFAULT_MIN_SAMPLES,
) -> LatencyComparison:
    """`before`, `after`: each run's summary.json `driver_operations` (None: not measured)."""
    if threshold <= 0 or min_samples < 1:
        raise ValueError("the threshold must be > 0 and the minimum of samples >= 1")
    old, new = _operations(before), _operations(after)
    rows = []
    for key in list(old) + [k for k in new if k not in old]:
        rows.append(_row(key, old, new, before, after, threshold, min_samples))
    return LatencyComparison(
        threshold, min_samples, tuple(rows), _whole_side_missing(before), _whole_side_missing(after)
    )


def _row(
    key: tuple[str, str, str],
    old: Mapping[tuple[str, str, str], OperationLatency],
    new: Mapping[tuple[str, str, str], OperationLatency],
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    threshold: float,
    min_samples: int,
) -> LatencyRow:
    a, b = old.get(key), new.get(key)

    def row(change: LatencyChange, increase: float | None = None, note: str = "") -> LatencyRow:
        return LatencyRow(*key, before=a, after=b, change=change, increase=increase, note=note)

    if a is None or b is None:
        missing, side, document = (
            ("before", "earlier", before)
            if a is None
            else (
                "after",
                "later",
                after,
            )
        )
        why = _section_missing(document, key[0]) or f"not called in the {side} run"
        return row(LatencyChange.NOT_AVAILABLE, note=f"{missing}: {why}")
    if min(a.count, b.count) < min_samples or a.p95 is None or b.p95 is None:
        return row(
            LatencyChange.TOO_FEW_SAMPLES,
            note=f"{a.count} and {b.count} calls; at least {min_samples} on each side are compared",
        )
    if a.p95.beyond:
        if b.p95.beyond:
            return row(LatencyChange.NOT_COMPARABLE, note="both beyond the last bucket")
        return row(LatencyChange.NO_REGRESSION, note="the earlier one was beyond the last bucket")
    if a.p95.seconds <= 0:
        return row(LatencyChange.NOT_COMPARABLE, note="the earlier p95 is 0 s")
    increase = b.p95.seconds / a.p95.seconds - 1
    regressed = increase > threshold
    note = "at least (beyond the last bucket)" if b.p95.beyond else ""
    return row(
        LatencyChange.REGRESSION if regressed else LatencyChange.NO_REGRESSION, increase, note
    )


def _operations(document: Mapping[str, Any] | None) -> dict[tuple[str, str, str], OperationLatency]:
    out: dict[tuple[str, str, str], OperationLatency] = {}
    if not document or document.get("not_available"):
        return out
    for key, measured_by, driver_key, op_key in SECTIONS:
        for row in document.get(key) or ():
            buckets = row.get("buckets") or {}
            name = (measured_by, str(row.get(driver_key) or "") if driver_key else "", row[op_key])
            out[name] = OperationLatency(
                count=int(row.get("count") or 0),
                p50=interpolated_quantile(buckets, 0.5),
                p95=interpolated_quantile(buckets, QUANTILE),
            )
    return out


def _whole_side_missing(document: Mapping[str, Any] | None) -> str | None:
    if document is None:
        return "not measured (the run had no DRA harness, or predates the figures)"
    if document.get("not_available"):
        return str(document["not_available"])
    return None


def _section_missing(document: Mapping[str, Any] | None, measured_by: str) -> str | None:
    """Why a side has no figures for a whole section (None: it was read)."""
    whole = _whole_side_missing(document)
    if whole is not None or document is None:
        return whole
    for key, who, _, _ in SECTIONS:
        if who == measured_by and document.get(key) is None:
            why = (document.get("unavailable") or {}).get(key)
            return f"not available ({why})" if why else "not available (not read)"
    return None


def latency_json(comparison: LatencyComparison) -> dict[str, Any]:
    def side(latency: OperationLatency | None) -> dict[str, Any] | None:
        if latency is None:
            return None
        return {
            "count": latency.count,
            "p50": _estimate(latency.p50),
            "p95": _estimate(latency.p95),
        }

    return {
        "decides_verdict": False,
        "threshold": comparison.threshold,
        "min_samples": comparison.min_samples,
        "method": METHOD_NOTE,
        "not_available": {
            "from": comparison.unavailable_before,
            "to": comparison.unavailable_after,
        },
        "regressions": [r.name for r in comparison.regressions],
        "operations": [
            {
                "measured_by": r.measured_by,
                "driver": r.driver,
                "operation": r.operation,
                "from": side(r.before),
                "to": side(r.after),
                "p95_increase": None if r.increase is None else round(r.increase, 4),
                "change": r.change.value,
                "note": r.note,
            }
            for r in comparison.rows
        ],
    }


def latency_markdown(comparison: LatencyComparison, before: str, after: str) -> list[str]:
    """gate.md's section; it never changes the gate's verdict."""
    lines = [
        "",
        "## Driver operation latency",
        "",
        f"Reported, never judged: a p95 more than {comparison.threshold:.0%} above {before}'s "
        f"is flagged as a regression; operations with fewer than {comparison.min_samples} calls "
        f"on a side are not compared. {METHOD_NOTE}.",
        "",
    ]
    for label, why in (
        (before, comparison.unavailable_before),
        (after, comparison.unavailable_after),
    ):
        if why:
            lines.append(f"- {label}: not available ({why})")
    if comparison.regressions:
        lines.append(
            "Latency regressions: "
            + "; ".join(
                f"{r.name} p95 {_p95(r.before)} → {_p95(r.after)} ({_increase(r.increase)})"
                for r in comparison.regressions
            )
        )
    elif comparison.rows:
        lines.append("No latency regression above the threshold.")
    if not comparison.rows:
        return [*lines, "No driver operation was measured on either side.", ""]
    lines += [
        "",
        f"| measured by | driver | operation | calls {before} | calls {after} "
        f"| p95 {before} | p95 {after} | change |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in comparison.rows:
        change = r.change.value
        if r.increase is not None:
            change += f" ({_increase(r.increase)})"
        if r.note:
            change += f" — {r.note}"
        lines.append(
            f"| {r.measured_by} | {r.driver} | {r.operation} | {_count(r.before)} "
            f"| {_count(r.after)} | {_p95(r.before)} | {_p95(r.after)} | {change} |"
        )
    return [*lines, ""]


def _estimate(estimate: Estimate | None) -> dict[str, Any] | None:
    if estimate is None:
        return None
    return {"gt" if estimate.beyond else "s": round(estimate.seconds, 6)}


def _count(latency: OperationLatency | None) -> str:
    return "-" if latency is None else str(latency.count)


def _p95(latency: OperationLatency | None) -> str:
    return "-" if latency is None or latency.p95 is None else latency.p95.text()


def _increase(increase: float | None) -> str:
    """+30 %, or ×12 for a p95 that more than doubled."""
    if increase is None:
        return ""
    return f"×{increase + 1:.3g}" if increase >= 1 else f"{increase:+.0%}"


def _seconds(value: float) -> str:
    return f"{value * 1000:.3g} ms" if value < 1 else f"{value:.3g} s"


def chart_rows(comparison: LatencyComparison) -> list[LatencyRow]:
    """The operations with a p95 on at least one side, for the side-by-side chart."""
    return [
        r
        for r in comparison.rows
        if any(s is not None and s.p95 is not None for s in (r.before, r.after))
    ]
