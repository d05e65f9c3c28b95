"""Prometheus text exposition -> the histogram series and gauges of chosen families, with
prometheus_client's parser (the format's own implementation, escapes and all)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from conformance.metrics.histogram import HistogramSeries, Labels
from conformance.model.metrics_text import only_families


class MetricsParseError(ValueError):
    """The text is not Prometheus exposition format."""


@dataclass(frozen=True)
class GaugeSample:
    labels: Labels
    value: float

    def label(self, name: str) -> str:
        return dict(self.labels).get(name, "")


@dataclass
class ParsedMetrics:
    histograms: dict[str, list[HistogramSeries]] = field(default_factory=dict)
    gauges: dict[str, list[GaugeSample]] = field(default_factory=dict)


def parse_metrics(text: str, families: Iterable[str] | None = None) -> ParsedMetrics:
    """The histograms and gauges (counters too, as plain values) of `families` (all when None)
    in `text`. Lines of other families are dropped before parsing: a kubelet's whole page is
    large and the run needs a handful of families."""
    wanted = None if families is None else tuple(families)
    if wanted is not None:
        text = only_families(text, wanted)
    parsed = ParsedMetrics()
    try:
        for family in text_string_to_metric_families(text):
            if family.type == "histogram":
                parsed.histograms[family.name] = _histogram_series(family.name, family.samples)
            elif family.type in ("gauge", "counter", "untyped", "unknown"):
                parsed.gauges[family.name] = [
                    GaugeSample(_labels(s.labels), float(s.value)) for s in family.samples
                ]
    except ValueError as exc:
        raise MetricsParseError(f"not Prometheus text: {exc}") from exc
    return parsed


def _labels(labels: dict[str, str], drop: str = "") -> Labels:
    return tuple(sorted((k, v) for k, v in labels.items() if k != drop))


def _histogram_series(name: str, samples: Iterable) -> list[HistogramSeries]:
    buckets: dict[Labels, dict[float, float]] = {}
    counts: dict[Labels, float] = {}
    sums: dict[Labels, float] = {}
    for sample in samples:
        key = _labels(sample.labels, drop="le")
        if sample.name == name + "_bucket":
            le = float(sample.labels.get("le", "+Inf"))
            buckets.setdefault(key, {})[le] = float(sample.value)
        elif sample.name == name + "_count":
            counts[key] = float(sample.value)
        elif sample.name == name + "_sum":
            sums[key] = float(sample.value)
    series = []
    for key in sorted(set(buckets) | set(counts)):
        bounds = buckets.get(key, {})
        count = counts.get(key, bounds.get(math.inf, 0.0))
        bounds.setdefault(math.inf, count)
        series.append(
            HistogramSeries(key, tuple(sorted(bounds.items())), count, sums.get(key, 0.0))
        )
    return series
