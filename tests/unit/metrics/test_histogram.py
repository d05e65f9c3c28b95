"""conformance.metrics.histogram: deltas, resets, sums and quantiles from buckets."""

from __future__ import annotations

import math

import pytest

from conformance.metrics.histogram import HistogramSeries, bucket_quantile, merged

LABELS = (("driver_name", "d"),)


def _series(
    cumulative: tuple[float, ...], total: float, bounds=(0.01, 0.1, 1.0)
) -> HistogramSeries:
    buckets = tuple(zip((*bounds, math.inf), cumulative, strict=True))
    return HistogramSeries(LABELS, buckets, cumulative[-1], total)


def test_minus_gives_what_happened_in_between() -> None:
    start, end = _series((1, 2, 2, 3), 1.5), _series((4, 8, 9, 10), 4.0)
    delta, reset = end.minus(start)
    assert not reset
    assert delta.buckets == ((0.01, 3), (0.1, 6), (1.0, 7), (math.inf, 7))
    assert (delta.count, delta.sum) == (7, 2.5)


def test_minus_without_a_start_read_is_the_whole_series() -> None:
    end = _series((1, 1, 1, 1), 0.005)
    assert end.minus(None) == (end, False)


def test_a_counter_lower_at_the_end_is_a_reset_never_a_negative_count() -> None:
    start, end = _series((5, 9, 9, 9), 3.0), _series((1, 2, 2, 2), 0.2)
    delta, reset = end.minus(start)
    assert reset
    assert delta.count == 2 and all(n >= 0 for _, n in delta.buckets)


def test_merged_sums_series_of_several_nodes() -> None:
    total = merged([_series((1, 2, 2, 3), 1.0), _series((0, 1, 4, 4), 2.0)])
    assert total is not None
    assert total.buckets == ((0.01, 1), (0.1, 3), (1.0, 6), (math.inf, 7))
    assert (total.count, total.sum) == (7, 3.0)
    assert merged([]) is None


def test_quantile_is_the_upper_bound_of_the_bucket_holding_the_rank() -> None:
    series = _series((50, 90, 99, 100), 10.0)
    assert bucket_quantile(series, 0.5).to_dict() == {"le": 0.01}
    assert bucket_quantile(series, 0.51).to_dict() == {"le": 0.1}
    assert bucket_quantile(series, 0.95).to_dict() == {"le": 1.0}
    assert bucket_quantile(series, 0.99).to_dict() == {"le": 1.0}


def test_a_quantile_beyond_the_last_bucket_says_so() -> None:
    series = _series((0, 0, 1, 10), 80.0)
    assert bucket_quantile(series, 0.5).to_dict() == {"gt": 1.0}
    assert bucket_quantile(series, 0.1).to_dict() == {"le": 1.0}


def test_quantile_of_nothing_is_none_and_q_must_be_a_fraction() -> None:
    assert bucket_quantile(_series((0, 0, 0, 0), 0.0), 0.5) is None
    with pytest.raises(ValueError, match="quantile"):
        bucket_quantile(_series((1, 1, 1, 1), 0.0), 95)
