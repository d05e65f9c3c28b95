"""The gate's latency comparison: a p95 regression above the threshold is flagged, never judged;
too few calls and figures that could not be read are said so, never compared as zero."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

# numpy (under matplotlib) cannot be imported twice in one process: see test_report_charts
import matplotlib.figure  # noqa: F401
import pytest

from conformance.report.charts import GATE_LATENCY_SVG, write_gate_chart
from conformance.report.gate import compare, side_of, to_json, to_markdown, write
from conformance.report.gate_latency import (
    Estimate,
    LatencyChange,
    compare_latency,
    interpolated_quantile,
    latency_markdown,
)

DRIVER = "gpu.example.com"
BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]


def _buckets(seconds: list[float]) -> dict:
    """summary.json's buckets for calls that took `seconds`."""
    counts = [0] * (len(BOUNDS) + 1)
    for value in seconds:
        index = next((i for i, b in enumerate(BOUNDS) if value <= b), len(BOUNDS))
        counts[index] += 1
    return {"le": BOUNDS, "counts": counts}


def _ops(prepare: list[float], unprepare: list[float] | None = None, **extra) -> dict:
    rows = [("NodePrepareResources", prepare), ("NodeUnprepareResources", unprepare)]
    return {
        "grpc": [
            {
                "driver": DRIVER,
                "method": method,
                "count": len(seconds),
                "errors": 0,
                "buckets": _buckets(seconds),
            }
            for method, seconds in rows
            if seconds is not None
        ],
        "kubelet_operations": [],
        "scheduler": None,
    } | extra


def _by_operation(comparison) -> dict:
    return {row.operation: row for row in comparison.rows}


def test_interpolates_inside_the_bucket_like_histogram_quantile() -> None:
    # 10 calls: 4 at most 0.01, 6 in (0.01, 0.025]: rank 9.5 lies 5.5/6 into the second bucket
    estimate = interpolated_quantile({"le": [0.01, 0.025], "counts": [4, 6, 0]}, 0.95)
    assert estimate == Estimate(pytest.approx(0.01 + 0.015 * 5.5 / 6))
    # the first bucket starts at 0
    assert interpolated_quantile({"le": [0.1], "counts": [2, 0]}, 0.5) == Estimate(0.05)
    # beyond the last bound: only "more than it"
    assert interpolated_quantile({"le": [0.1], "counts": [1, 9]}, 0.95) == Estimate(0.1, True)
    assert interpolated_quantile({"le": [0.1], "counts": [0, 0]}, 0.95) is None


def test_a_prepare_two_seconds_slower_is_a_regression_and_unprepare_is_not() -> None:
    fast = [0.003] * 6
    comparison = compare_latency(_ops(fast, fast), _ops([2.003] * 6, [0.004] * 6))
    rows = _by_operation(comparison)
    prepare = rows["NodePrepareResources"]
    assert prepare.change is LatencyChange.REGRESSION
    assert prepare.increase > 100  # from ms to seconds
    assert rows["NodeUnprepareResources"].change is LatencyChange.NO_REGRESSION
    assert [r.operation for r in comparison.regressions] == ["NodePrepareResources"]


def test_the_threshold_decides_what_is_flagged() -> None:
    before, after = _ops([0.04] * 10), _ops([0.07] * 10)  # (0.025, 0.05] -> (0.05, 0.1]
    [row] = compare_latency(before, after, threshold=0.5).rows
    assert row.change is LatencyChange.REGRESSION and row.increase == pytest.approx(1.0)
    assert "| regression (×2) |" in "\n".join(
        latency_markdown(compare_latency(before, after), "a", "b")
    )
    [row] = compare_latency(before, after, threshold=1.5).rows
    assert row.change is LatencyChange.NO_REGRESSION
    with pytest.raises(ValueError):
        compare_latency(before, after, threshold=0)


def test_too_few_calls_are_said_so_and_not_compared() -> None:
    [row] = compare_latency(_ops([0.003] * 2), _ops([3.0] * 9), min_samples=5).rows
    assert row.change is LatencyChange.TOO_FEW_SAMPLES and row.increase is None
    assert "2 and 9 calls" in row.note
    [row] = compare_latency(_ops([0.003] * 2), _ops([3.0] * 9), min_samples=2).rows
    assert row.change is LatencyChange.REGRESSION


def test_a_side_that_could_not_be_read_is_not_available_never_zero() -> None:
    why = "forbidden (HTTP 403): cannot get nodes/proxy"
    forbidden = {"grpc": None, "kubelet_operations": None, "scheduler": None}
    forbidden["unavailable"] = {"grpc": why}
    comparison = compare_latency(_ops([0.003] * 6), forbidden)
    [row] = comparison.rows
    assert row.change is LatencyChange.NOT_AVAILABLE and row.after is None
    assert why in row.note and comparison.regressions == ()
    whole = compare_latency({"not_available": "the run was interrupted"}, _ops([9.0] * 6))
    assert whole.unavailable_before == "the run was interrupted"
    assert {r.change for r in whole.rows} == {LatencyChange.NOT_AVAILABLE}
    old = compare_latency(None, _ops([9.0] * 6))  # a summary written before the figures
    assert "not measured" in old.unavailable_before and old.regressions == ()


def test_an_operation_the_later_run_never_called_is_not_available() -> None:
    [_, unprepare] = compare_latency(_ops([0.003] * 6, [0.003] * 6), _ops([0.003] * 6)).rows
    assert unprepare.change is LatencyChange.NOT_AVAILABLE
    assert unprepare.note == "after: not called in the later run"


def test_beyond_the_last_bucket_is_compared_as_that_bound_at_least() -> None:
    [row] = compare_latency(_ops([0.003] * 6), _ops([30.0] * 6)).rows
    assert row.change is LatencyChange.REGRESSION and "at least" in row.note
    [row] = compare_latency(_ops([30.0] * 6), _ops([30.0] * 6)).rows
    assert row.change is LatencyChange.NOT_COMPARABLE


def _summary(version: str, ops: dict | None) -> dict:
    return {
        "run": {"id": f"run-{version}"},
        "cluster": {"kubernetes_version": version},
        "verdict": "CONFORMANT",
        "requirements": [{"id": "DRA-CORE-001", "level": "MUST", "status": "passed"}],
        "driver_operations": ops,
    }


def test_a_latency_regression_is_in_gate_files_but_never_fails_the_gate(tmp_path: Path) -> None:
    before = _summary("v1.36.3", _ops([0.003] * 6, [0.002] * 6))
    after = _summary("v1.37.2", _ops([2.003] * 6, [0.002] * 6))
    result = compare(side_of(before), side_of(after))
    latency = compare_latency(before["driver_operations"], after["driver_operations"])
    chart = write_gate_chart(tmp_path, latency, ("v1.36.3", "v1.37.2"))
    result = replace(result, latency=latency, latency_chart=chart.name)
    assert result.passed and result.exit_code == 0
    document = to_json(result)
    assert document["passed"] is True
    latency_json = document["driver_latency"]
    assert latency_json["decides_verdict"] is False and latency_json["threshold"] == 0.5
    assert latency_json["regressions"] == [
        f"kubelet → driver (gRPC): {DRIVER} NodePrepareResources"
    ]
    [prepare] = [o for o in latency_json["operations"] if o["operation"] == "NodePrepareResources"]
    assert prepare["change"] == "regression" and prepare["to"]["count"] == 6
    assert prepare["to"]["p95"]["s"] > 1 > prepare["from"]["p95"]["s"]
    markdown = to_markdown(result)
    assert markdown.splitlines()[0].endswith(": PASS")
    assert (
        "Latency regressions: kubelet → driver (gRPC): gpu.example.com NodePrepareResources "
        "p95 4.75 ms → 2.42 s (×511)" in markdown
    )
    assert "| NodeUnprepareResources | 6 | 6 |" in markdown
    assert f"]({GATE_LATENCY_SVG})" in markdown
    svg = (tmp_path / GATE_LATENCY_SVG).read_text()
    assert ET.fromstring(svg).tag == "{http://www.w3.org/2000/svg}svg"
    # matplotlib keeps each text as a comment beside its glyphs: the legend names both runs
    assert "v1.36.3" in svg and "v1.37.2" in svg and "NodePrepareResources" in svg
    md, js = write(result, tmp_path)
    assert json.loads(js.read_text())["latency_chart"] == GATE_LATENCY_SVG
    assert md.read_text() == markdown


def test_no_chart_when_neither_run_measured_an_operation(tmp_path: Path) -> None:
    latency = compare_latency(None, {"not_available": "the start read failed"})
    assert write_gate_chart(tmp_path, latency, ("a", "b")) is None
    assert not (tmp_path / GATE_LATENCY_SVG).exists()
    markdown = "\n".join(
        to_markdown(
            compare(side_of(_summary("a", None)), side_of(_summary("b", None)))
        ).splitlines()
    )
    assert "Driver operation latency" not in markdown  # no comparison was asked for


def _gate_args(*argv: str):
    from conformance.cli import app, gate_command

    parser = app.build_parser([gate_command.add_gate_command])
    return app.parse_args(parser, ["gate", "--profile", "p.yaml", *argv])


def test_the_gate_options_default_to_50_percent_and_5_calls() -> None:
    args = _gate_args("--baseline", "s.json")
    assert (args.latency_threshold, args.latency_min_samples) == (50.0, 5)
    args = _gate_args("--latency-threshold", "20%", "--latency-min-samples", "1")
    assert (args.latency_threshold, args.latency_min_samples) == (20.0, 1)


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--latency-threshold", "0", "'0' is not a percentage above 0"),
        ("--latency-threshold", "fast", "'fast' is not a percentage above 0"),
        ("--latency-min-samples", "0", "'0' is not a whole number of at least 1"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2(
    option: str, value: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        _gate_args(option, value)
    assert stopped.value.code == 2
    assert f"argument {option}: {said}" in capsys.readouterr().err
