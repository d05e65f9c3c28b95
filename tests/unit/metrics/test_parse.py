"""conformance.metrics.parse and .calls: Prometheus text -> series, with real page layouts."""

from __future__ import annotations

import math

import pytest
from helpers.metric_pages import DRIVER, V1, V1BETA1, grpc, kubelet_page

from conformance.metrics.calls import dra_grpc_calls
from conformance.metrics.parse import MetricsParseError, parse_metrics

PREPARE = V1 + "NodePrepareResources"


def test_histogram_series_keep_labels_buckets_count_and_sum() -> None:
    page = kubelet_page(grpc(DRIVER, PREPARE, "OK", (1, 4, 6, 6, 7), 2.25))
    parsed = parse_metrics(page)
    (series,) = parsed.histograms["dra_grpc_operations_duration_seconds"]
    assert series.labels == (
        ("driver_name", DRIVER),
        ("grpc_status_code", "OK"),
        ("method_name", PREPARE),
    )
    assert series.buckets == ((0.01, 1), (0.05, 4), (0.1, 6), (1.0, 6), (math.inf, 7))
    assert (series.count, series.sum) == (7, 2.25)


def test_gauges_and_counters_are_values_per_label_set() -> None:
    parsed = parse_metrics(kubelet_page(claims_in_use=3))
    in_use = {s.label("driver_name"): s.value for s in parsed.gauges["dra_resource_claims_in_use"]}
    assert in_use == {"<any>": 3.0, DRIVER: 3.0}
    assert parsed.gauges["kubelet_running_pods"][0].value == 7.0


def test_only_the_families_asked_for_are_kept() -> None:
    page = kubelet_page(grpc(DRIVER, PREPARE, "OK", (1, 1, 1, 1, 1), 0.001), claims_in_use=1)
    parsed = parse_metrics(page, ("dra_resource_claims_in_use",))
    assert set(parsed.gauges) == {"dra_resource_claims_in_use"}
    assert parsed.histograms == {}


def test_escaped_label_values_are_unescaped() -> None:
    page = 'x_seconds_count{path="a\\"b\\\\c"} 2\n'
    (sample,) = parse_metrics(page).gauges["x_seconds_count"]
    assert sample.label("path") == 'a"b\\c'


def test_text_that_is_not_prometheus_format_is_an_error() -> None:
    with pytest.raises(MetricsParseError, match="not Prometheus text"):
        parse_metrics('dra_resource_claims_in_use{driver_name="x" 1\n')


def test_dra_grpc_calls_counts_one_method_of_one_driver_over_api_versions() -> None:
    page = kubelet_page(
        grpc(DRIVER, V1 + "NodeUnprepareResources", "OK", (3, 3, 3, 3, 3), 0.1),
        grpc(DRIVER, V1BETA1 + "NodeUnprepareResources", "OK", (2, 2, 2, 2, 2), 0.1),
        grpc(DRIVER, V1 + "NodeUnprepareResources", "Unknown", (7, 7, 7, 7, 7), 0.1),
        grpc(DRIVER, PREPARE, "OK", (11, 11, 11, 11, 11), 0.1),
        grpc("other.example.com", V1 + "NodeUnprepareResources", "OK", (5, 5, 5, 5, 5), 0.1),
    )
    assert dra_grpc_calls(page, DRIVER, "NodeUnprepareResources") == 5
    assert dra_grpc_calls(page, DRIVER, "NodeUnprepareResources", "Unknown") == 7
    assert dra_grpc_calls(page, DRIVER, "NodePrepareResources") == 11
    assert dra_grpc_calls(page, "other.example.com", "NodeUnprepareResources") == 5
    assert dra_grpc_calls("", DRIVER, "NodeUnprepareResources") == 0
