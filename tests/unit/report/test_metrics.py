"""Performance figures: recording API and aggregation."""

from __future__ import annotations

import json

import pytest

from conformance.report.metrics import (
    SESSION_METRICS_KEY,
    aggregate_metrics,
    percentile,
    record_metric,
    session_metrics,
)


def test_percentiles_interpolate_between_ranks() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == pytest.approx(2.5)
    assert percentile(values, 95) == pytest.approx(3.85)
    assert percentile(values, 100) == 4.0
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)


def test_aggregate_by_name() -> None:
    samples = [{"name": "b", "value_s": v} for v in (1, 2, 3)] + [{"name": "a", "value_s": 10}]
    samples.append({"name": "broken"})  # ignored: no value
    stats = aggregate_metrics(samples)
    assert list(stats) == ["a", "b"]
    assert stats["b"] == {
        "unit": "s",
        "count": 3,
        "p50": 2.0,
        "p95": 2.9,
        "min": 1.0,
        "max": 3.0,
        "mean": 2.0,
    }


def test_record_metric_on_the_test_and_on_the_config(request) -> None:
    before = len(request.node.user_properties)
    record_metric(request, "claim_allocated", 0.25, node="worker-1")
    name, value = request.node.user_properties[before]
    assert name == "metric"
    assert json.loads(value) == {
        "name": "claim_allocated",
        "value_s": 0.25,
        "labels": {"node": "worker-1"},
    }
    del request.node.user_properties[before:]

    count = len(session_metrics(request.config))
    record_metric(request.config, "run_level", 3)
    assert session_metrics(request.config)[count:] == [{"name": "run_level", "value_s": 3.0}]
    del request.config.stash[SESSION_METRICS_KEY][count:]  # keep this run's own report clean


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "soon"])
def test_record_metric_refuses_non_numbers(request, value) -> None:
    with pytest.raises(ValueError):
        record_metric(request, "x", value)


def test_record_metric_needs_a_test_or_config() -> None:
    with pytest.raises(TypeError, match="request"):
        record_metric(object(), "x", 1.0)
