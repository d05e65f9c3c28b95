"""What a source counted over a run read many times, the way Prometheus's `increase()` does:
the sum of the increases between consecutive reads, where a reset (the process restarted)
makes the later read's whole value the increase of that step. Reading only the run's two ends
undercounts: a kubelet restarted by the suite starts its counters at zero and may climb back
above its start value before the end read, so no counter is seen going down.

A reset is seen three ways: the process's `process_start_time_seconds` changed, a counter went
down, or a series vanished. What was counted between the last read before a restart and the
restart itself is lost; reading right before each restart the suite causes keeps that short.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from conformance.metrics.histogram import HistogramSeries, Labels, merged
from conformance.metrics.parse import ParsedMetrics
from conformance.metrics.scrape import PROCESS_START

START_TOLERANCE_S = 1.0  # the gauge is rounded to the second on some builds


@dataclass(frozen=True)
class Read:
    """One read of one source."""

    taken: float  # epoch seconds
    metrics: ParsedMetrics


@dataclass(frozen=True)
class Reset:
    """A source whose counters started again between two reads."""

    source: str
    after: float  # the last read before it
    before: float  # the first read after it
    started: float | None  # the process's start time after it, when it says so
    seen_by: str  # "process start time", "<family> went down" ...

    def describe(self) -> str:
        when = f"at {_clock(self.started)}" if self.started else "at an unknown time"
        return (
            f"{self.source}: restarted {when}, between the reads at {_clock(self.after)} and "
            f"{_clock(self.before)} ({self.seen_by}); its counters are summed across it"
        )


def started_at(metrics: ParsedMetrics) -> float | None:
    samples = metrics.gauges.get(PROCESS_START) or []
    return samples[0].value if samples else None


def reset_between(source: str, earlier: Read, later: Read, families: Iterable[str]) -> Reset | None:
    """The reset between two consecutive reads of `source`, if any."""
    before, after = started_at(earlier.metrics), started_at(later.metrics)
    if before is not None and after is not None and after - before > START_TOLERANCE_S:
        return Reset(source, earlier.taken, later.taken, after, "process start time")
    for family in families:
        then = {s.labels: s for s in earlier.metrics.histograms.get(family, [])}
        now = {s.labels: s for s in later.metrics.histograms.get(family, [])}
        if set(then) - set(now):
            return Reset(source, earlier.taken, later.taken, after, f"a {family} series vanished")
        for labels, series in now.items():
            if series.minus(then.get(labels))[1]:
                return Reset(source, earlier.taken, later.taken, after, f"{family} went down")
    return None


def source_increase(
    source: str, reads: Sequence[Read], family: str, resets: Sequence[Reset]
) -> dict[Labels, HistogramSeries]:
    """Per series of `family`: what `source` counted from its first read to its last, summed
    over the steps between reads, each step's reset (from `resets`) taken into account."""
    restarted = {r.before for r in resets if r.source == source}
    steps: dict[Labels, list[HistogramSeries]] = {}
    for earlier, later in zip(reads, reads[1:], strict=False):
        then = {s.labels: s for s in earlier.metrics.histograms.get(family, [])}
        for series in later.metrics.histograms.get(family, []):
            if later.taken in restarted:
                step = series  # all it counted since it started again
            else:
                step, went_down = series.minus(then.get(series.labels))
                if went_down:
                    step = series
            if step.count > 0:
                steps.setdefault(series.labels, []).append(step)
    out = {}
    for labels, parts in steps.items():
        total = merged(parts, labels)
        if total is not None:
            out[labels] = total
    return out


def source_resets(source: str, reads: Sequence[Read], families: Iterable[str]) -> list[Reset]:
    wanted = tuple(families)
    found = []
    for earlier, later in zip(reads, reads[1:], strict=False):
        reset = reset_between(source, earlier, later, wanted)
        if reset is not None:
            found.append(reset)
    return found


def _clock(epoch: float) -> str:
    return time.strftime("%H:%M:%SZ", time.gmtime(epoch))
