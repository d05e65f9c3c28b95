"""conformance.report.charts and run_figures: SVG charts from summary.json, never fatal."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

# numpy (under matplotlib) cannot be imported twice in one process: load it before any in-process
# pytester run of the plugin draws charts and has its modules dropped again afterwards
import matplotlib.figure  # noqa: F401

from conformance.report.driver_markdown import charts_section
from conformance.report.run_figures import draw_charts

ROW = {
    "driver": "gpu.example.com",
    "method": "NodePrepareResources",
    "count": 12,
    "errors": 1,
    "buckets": {"le": [0.01, 0.05, 0.1], "counts": [3, 5, 1, 3]},
}
TESTS = [
    {
        "nodeid": "a",
        "outcome": "passed",
        "worker": "gw0",
        "start": 100.0,
        "stop": 110.0,
        "lease_wait_s": 4.0,
    },
    {
        "nodeid": "b",
        "outcome": "failed",
        "worker": "gw1",
        "start": 101.0,
        "stop": 103.0,
        "lease_wait_s": None,
    },
]


def _summary(**extra: object) -> dict:
    return {"driver_operations": {"grpc": [ROW]}, "tests": TESTS, "artifacts": {}, **extra}


def test_latency_and_timeline_charts_are_svg_listed_in_the_summary(tmp_path: Path) -> None:
    summary, problems = _summary(), []
    charts = draw_charts(tmp_path, summary, skip=False, problems=problems)
    assert problems == []
    assert summary["artifacts"]["charts"] == ["charts/driver-latency.svg", "charts/timeline.svg"]
    latency = charts[0].read_text()
    assert ET.fromstring(latency).tag == "{http://www.w3.org/2000/svg}svg"
    assert "NodePrepareResources" in latency and "12 calls, 1 errors" in latency
    assert "gw1" in charts[1].read_text()
    assert charts_section(summary) == [
        "## Charts",
        "",
        "![charts/driver-latency.svg](charts/driver-latency.svg)",
        "",
        "![charts/timeline.svg](charts/timeline.svg)",
        "",
    ]


def test_no_figures_no_charts_and_an_interrupted_run_draws_none(tmp_path: Path) -> None:
    empty = {"driver_operations": {"not_available": "x"}, "tests": [], "artifacts": {}}
    assert draw_charts(tmp_path, empty, skip=False, problems=[]) == []
    assert charts_section(empty) == []
    summary = _summary()
    assert draw_charts(tmp_path, summary, skip=True, problems=[]) == []
    assert summary["artifacts"]["charts"] == []


def test_a_chart_that_cannot_be_drawn_is_a_warning_not_an_exception(tmp_path: Path) -> None:
    broken = {**ROW, "buckets": {"le": [0.01], "counts": "not a list of numbers"}}
    summary, problems = _summary(driver_operations={"grpc": [broken]}, tests=[]), []
    assert draw_charts(tmp_path, summary, skip=False, problems=problems) == []
    assert summary["artifacts"]["charts"] == []
    assert problems and problems[0].startswith("charts not drawn: ")


def test_the_per_test_chart_draws_each_test_that_saw_a_prepare(tmp_path: Path) -> None:
    calls = [
        {"method": "NodePrepareResources", "calls": 2, "errors": 0, "mean_s": 0.04},
        {"method": "NodeUnprepareResources", "calls": 2, "errors": 1, "mean_s": 0.3},
        {"method": "NodeWatchResources", "calls": 1, "errors": 0, "mean_s": 9.0},
    ]
    tests = [
        {**TESTS[0], "nodeid": "scenarios/core/test_a.py::test_prepares", "driver_calls": calls},
        {**TESTS[1], "nodeid": "scenarios/core/test_b.py::test_no_prepare", "driver_calls": []},
    ]
    summary, problems = _summary(tests=tests), []
    charts = draw_charts(tmp_path, summary, skip=False, problems=problems)
    assert problems == []
    assert summary["artifacts"]["charts"][-1] == "charts/driver-calls-per-test.svg"
    svg = charts[-1].read_text()
    assert ET.fromstring(svg).tag == "{http://www.w3.org/2000/svg}svg"
    assert "test_prepares" in svg and "test_no_prepare" not in svg
    assert "NodeUnprepareResources" in svg and "2, 1 failed" in svg
    assert "NodeWatchResources" not in svg  # a stream, not a call with a latency


def test_the_load_chart_draws_the_time_line_of_the_periodic_reads(tmp_path: Path) -> None:
    points = [
        {"t_s": 15.0, "prepare": 3, "unprepare": 1, "errors": 0, "claims_in_use": 2},
        {"t_s": 30.0, "prepare": 0, "unprepare": 2, "errors": 1, "claims_in_use": 0},
    ]
    summary, problems = (
        _summary(driver_operations={"grpc": [ROW], "timeline": {"points": points}}),
        [],
    )
    draw_charts(tmp_path, summary, skip=False, problems=problems)
    assert problems == []
    assert "charts/driver-load.svg" in summary["artifacts"]["charts"]
    svg = (tmp_path / "charts" / "driver-load.svg").read_text()
    assert ET.fromstring(svg).tag == "{http://www.w3.org/2000/svg}svg"
    assert "NodeUnprepareResources" in svg and "claims held prepared" in svg
    # one point is no line: nothing drawn
    one = _summary(driver_operations={"grpc": [ROW], "timeline": {"points": points[:1]}})
    draw_charts(tmp_path / "one", one, skip=False, problems=problems)
    assert "charts/driver-load.svg" not in one["artifacts"]["charts"]
