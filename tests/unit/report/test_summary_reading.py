"""summary.md for its reader: the verdict, the failures and what to do first before the detail;
only the DRA feature gates; per-test driver figures that say whose calls they count."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.model.naming import file_safe
from conformance.report.catalog import RequirementInfo
from conformance.report.facts import RunFacts
from conformance.report.markdown import render_markdown
from conformance.report.outcomes import PROP_DRIVER_CALLS, TestRecord
from conformance.report.per_test_calls import HEADING
from conformance.report.summary import RunInfo, build_summary

CATALOG = {
    "DRA-CORE-001": RequirementInfo("DRA-CORE-001", "core", "MUST", "It registers."),
    "DRA-ALLOC-002": RequirementInfo(
        "DRA-ALLOC-002", "allocation", "MUST", "It allocates.", feature_gates=("DRAAdminAccess",)
    ),
    "DRA-HEALTH-003": RequirementInfo(
        "DRA-HEALTH-003",
        "health",
        "SHOULD",
        "It reports health.",
        feature_gates=("ResourceHealthStatus",),
    ),
}
GATES = {
    "DRAAdminAccess": True,
    "DRAConsumableCapacity": False,
    "DynamicResourceAllocation": True,
    "ResourceHealthStatus": True,
    "InPlacePodVerticalScaling": True,
    "SidecarContainers": True,
    "WatchList": False,
}


def _record(
    nodeid: str,
    req_id: str,
    outcome: str = "passed",
    reason: str = "",
    window: tuple[float, float] | None = None,
    calls: list[dict] | None = None,
) -> TestRecord:
    record = TestRecord(nodeid=nodeid, requirement_ids=[req_id])
    record.phases.update(setup="passed", call=outcome, teardown="passed")
    if reason:
        record.reasons["call"] = reason
    if window:
        record.start, record.stop = window
    if calls is not None:
        record.properties.append((PROP_DRIVER_CALLS, json.dumps(calls)))
    return record


def _calls(node: str, prepare: int = 1) -> list[dict]:
    return [
        {
            "method": m,
            "calls": prepare,
            "errors": 0,
            "mean_s": 0.01,
            "p95": {"le": 0.05},
            "nodes": [node],
        }
        for m in ("NodePrepareResources", "NodeUnprepareResources")
    ]


def _summary(records: list[TestRecord], report_dir: str = "") -> dict:
    run = RunInfo(id="r1", started=0.0, finished=10.0, report_dir=report_dir)
    facts = RunFacts(driver_name="gpu.example.com", feature_gates=dict(GATES))
    return build_summary(run=run, facts=facts, catalog=CATALOG, records=records)


def _failing_run(report_dir: str = "") -> dict:
    return _summary(
        [
            _record("t.py::test_registers", "DRA-CORE-001"),
            _record("t.py::test_allocates", "DRA-ALLOC-002", "failed", "no device was allocated"),
            _record("t.py::test_health", "DRA-HEALTH-003", "failed", "no health reported"),
        ],
        report_dir,
    )


def _positions(markdown: str, *texts: str) -> list[int]:
    found = [markdown.find(t) for t in texts]
    assert -1 not in found, dict(zip(texts, found, strict=True))
    return found


def test_the_verdict_failures_and_first_step_come_before_the_detail() -> None:
    summary = _failing_run()
    assert summary["verdict"] == "NON-CONFORMANT"
    markdown = render_markdown(summary)
    order = _positions(
        markdown,
        "# DRA conformance: **NON-CONFORMANT**",
        "Why it is not conformant:",
        "## Failures",
        "## What to do first",
        "## Overview",
        "MUST requirements:",
        "## Requirements",
        "## Run",
    )
    assert order == sorted(order)
    failures = markdown.split("## Failures", 1)[1].split("## What to do first", 1)[0]
    # the MUST first, then the SHOULD, each with its one-line reason; the passed one not at all
    assert failures.index("DRA-ALLOC-002") < failures.index("DRA-HEALTH-003")
    assert (
        "- **DRA-ALLOC-002** (MUST) FAIL: t.py::test_allocates: no device was allocated" in failures
    )
    assert "- **DRA-HEALTH-003** (SHOULD) FAIL: t.py::test_health: no health reported" in failures
    assert "DRA-CORE-001" not in failures
    first = markdown.split("## What to do first", 1)[1].split("##", 1)[0]
    assert "Fix **DRA-ALLOC-002** (MUST)" in first
    assert "no device was allocated" in first
    assert "Its test: `t.py::test_allocates`." in first


def test_the_first_step_points_at_the_failures_diagnostics(tmp_path: Path) -> None:
    (tmp_path / "diagnostics" / file_safe("t.py::test_allocates")).mkdir(parents=True)
    summary = _failing_run(str(tmp_path))
    test = next(t for t in summary["tests"] if t["nodeid"] == "t.py::test_allocates")
    assert test["diagnostics"] == f"diagnostics/{file_safe('t.py::test_allocates')}"
    first = render_markdown(summary).split("## What to do first", 1)[1].split("##", 1)[0]
    assert f"Evidence: `{test['diagnostics']}/`" in first


def test_a_conformant_run_says_nothing_failed() -> None:
    summary = _summary(
        [
            _record("t.py::test_registers", "DRA-CORE-001"),
            _record("t.py::test_allocates", "DRA-ALLOC-002"),
            _record("t.py::test_health", "DRA-HEALTH-003"),
        ]
    )
    markdown = render_markdown(summary)
    assert "No MUST or SHOULD requirement failed or errored." in markdown
    assert "Nothing to fix: every MUST requirement passed." in markdown


def test_the_run_section_shows_only_the_dra_gates() -> None:
    summary = _failing_run()
    assert summary["cluster"]["feature_gates"] == GATES  # summary.json keeps every gate
    assert summary["requirements"][1]["feature_gates"] == ["DRAAdminAccess"]
    line = next(ln for ln in render_markdown(summary).splitlines() if "feature gates" in ln)
    assert line == (
        "- DRA feature gates: DRAAdminAccess on, DRAConsumableCapacity off, "
        "DynamicResourceAllocation on, ResourceHealthStatus on; "
        "3 more in summary.json (`cluster.feature_gates`)"
    )
    for other in ("InPlacePodVerticalScaling", "SidecarContainers", "WatchList"):
        assert other not in line


def test_a_catalog_gate_the_cluster_does_not_report_is_said() -> None:
    summary = _failing_run()
    del summary["cluster"]["feature_gates"]["DRAAdminAccess"]  # went GA and was removed
    assert "DRAAdminAccess not reported" in render_markdown(summary)


WINDOWS = {
    # a and b overlap on node-1; c ran on node-1 after both; d overlapped a on node-2 only
    "t.py::test_a": ((0.0, 10.0), "node-1"),
    "t.py::test_b": ((5.0, 15.0), "node-1"),
    "t.py::test_c": ((20.0, 30.0), "node-1"),
    "t.py::test_d": ((1.0, 9.0), "node-2"),
}


def _shared_run() -> dict:
    return _summary(
        [
            _record(nodeid, "DRA-CORE-001", window=window, calls=_calls(node))
            for nodeid, (window, node) in WINDOWS.items()
        ]
        + [_record("t.py::test_unmeasured", "DRA-ALLOC-002", window=(0.0, 30.0))]
    )


def test_per_test_figures_count_the_tests_that_shared_their_node_and_window() -> None:
    tests = {t["nodeid"]: t for t in _shared_run()["tests"]}
    assert {n: t["driver_calls_shared_with"] for n, t in tests.items()} == {
        "t.py::test_a": 1,
        "t.py::test_b": 1,
        "t.py::test_c": 0,
        "t.py::test_d": 0,
        "t.py::test_unmeasured": None,
    }


def test_per_test_rows_say_their_calls_are_shared() -> None:
    markdown = render_markdown(_shared_run())
    section = markdown.split(HEADING, 1)[1].split("\n## ", 1)[0]
    rows = {ln.split(" | ")[0].lstrip("| "): ln for ln in section.splitlines() if "t.py::" in ln}
    assert set(rows) == {"t.py::test_a", "t.py::test_b", "t.py::test_c", "t.py::test_d"}
    assert rows["t.py::test_a"].endswith(
        "| calls on its node(s) during its window; shared with 1 other test |"
    )
    assert "| node-1 | 1 | 1 | 0 | 0 |" in rows["t.py::test_a"]
    assert rows["t.py::test_c"].endswith("shared with no other test |")


def test_an_older_summary_without_the_count_is_counted_when_rendered() -> None:
    summary = _shared_run()
    for test in summary["tests"]:
        del test["driver_calls_shared_with"]
    assert "shared with 1 other test |" in render_markdown(summary)


def test_a_run_without_a_verdict_says_to_run_it_to_completion() -> None:
    run = RunInfo(id="r1", started=0.0, finished=1.0, exit_status=2, interrupted=True)
    summary = build_summary(run=run, facts=None, catalog=CATALOG, records=[])
    first = render_markdown(summary).split("## What to do first", 1)[1].split("##", 1)[0]
    assert "run the suite again to completion" in first
    assert "Nothing to fix" not in first


def test_a_promised_may_that_failed_is_listed_first_and_named_promised() -> None:
    from conformance.report.markdown_first import failures_section, first_step

    summary = {
        "verdict": "NON-CONFORMANT",
        "requirements": [
            {"id": "S", "level": "SHOULD", "status": "failed", "reason": "slow"},
            {
                "id": "M",
                "level": "MAY",
                "status": "failed",
                "reason": "refused an admin-access claim",
                "promised_by": ["admin-access"],
                "tests": [],
            },
        ],
        "tests": [],
    }
    lines = failures_section(summary)
    assert lines[2].startswith("- **M** (MAY, promised by the declared admin-access) FAIL:")
    assert lines[3].startswith("- **S** (SHOULD) FAIL:")
    assert first_step(summary).startswith("Fix **M** (MAY, promised by the declared admin-access)")
