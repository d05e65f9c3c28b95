"""One Prometheus histogram series: the delta of two reads, the sum of several, and quantiles
estimated from its buckets (the upper bound of the bucket the rank falls in: "≤ bound")."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

Labels = tuple[tuple[str, str], ...]  # sorted (name, value) pairs, `le` left out


@dataclass(frozen=True)
class HistogramSeries:
    labels: Labels
    buckets: tuple[tuple[float, float], ...]  # (upper bound, cumulative count), +Inf last
    count: float
    sum: float

    def label(self, name: str) -> str:
        return dict(self.labels).get(name, "")

    def minus(self, start: HistogramSeries | None) -> tuple[HistogramSeries, bool]:
        """What happened between `start` and this read, and whether the counter was reset in
        between (a restarted process): then only what it counted since its restart, at least."""
        if start is None:
            return self, False
        if self.count < start.count or self.sum < start.sum - 1e-9:
            return self, True
        earlier = dict(start.buckets)
        buckets = tuple((le, max(0.0, n - earlier.get(le, 0.0))) for le, n in self.buckets)
        return HistogramSeries(
            self.labels, buckets, self.count - start.count, self.sum - start.sum
        ), False


def merged(series: Iterable[HistogramSeries], labels: Labels = ()) -> HistogramSeries | None:
    """The sum of series with the same bucket bounds (a bound missing from one counts 0)."""
    totals: dict[float, float] = {}
    count = total = 0.0
    seen = False
    for one in series:
        seen = True
        count += one.count
        total += one.sum
        for le, n in one.buckets:
            totals[le] = totals.get(le, 0.0) + n
    if not seen:
        return None
    return HistogramSeries(labels, tuple(sorted(totals.items())), count, total)


@dataclass(frozen=True)
class BucketQuantile:
    """A quantile read from buckets: at most `bound` seconds, or (in the +Inf bucket) more
    than the last finite bound."""

    bound: float
    above: bool = False  # True: beyond the last finite bucket, "> bound"

    def to_dict(self) -> dict[str, float]:
        return {"gt" if self.above else "le": self.bound}


def bucket_quantile(series: HistogramSeries, q: float) -> BucketQuantile | None:
    """The q-quantile (0 < q <= 1) as the upper bound of the first bucket whose cumulative
    count reaches rank q * count; None for an empty series."""
    if not 0 < q <= 1:
        raise ValueError(f"quantile must be in (0, 1], got {q}")
    if series.count <= 0:
        return None
    rank = q * series.count
    finite = [(le, n) for le, n in series.buckets if math.isfinite(le)]
    for le, cumulative in finite:
        if cumulative >= rank - 1e-9:
            return BucketQuantile(le)
    last = finite[-1][0] if finite else 0.0
    return BucketQuantile(last, above=True)
