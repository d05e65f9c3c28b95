"""A run's verdict is its own or none: the fenced report directory, NO-VERDICT summaries, and
the gate refusing to compare a run without a verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conformance.report.catalog import RequirementInfo
from conformance.report.gate import no_verdict, rehearsal_of
from conformance.report.markdown import render_markdown
from conformance.report.no_verdict import RUNNING, fence, own_summary, write_no_verdict
from conformance.report.outcomes import TestRecord
from conformance.report.summary import RunInfo, build_summary
from conformance.suite_root import SUITE_ROOT

CATALOG = {"DRA-CORE-001": RequirementInfo("DRA-CORE-001", "core", "MUST", "It works.")}


def _failed(nodeid: str, req_id: str) -> TestRecord:
    record = TestRecord(nodeid=nodeid, requirement_ids=[req_id])
    record.phases.update(setup="passed", call="failed", teardown="passed")
    record.reasons["call"] = "KeyboardInterrupt"
    return record


def test_an_interrupted_run_writes_no_verdict_not_non_conformant() -> None:
    run = RunInfo(id="r1", started=0.0, finished=1.0, exit_status=2, interrupted=True)
    summary = build_summary(
        run=run, facts=None, catalog=CATALOG, records=[_failed("t", "DRA-CORE-001")]
    )
    assert (summary["verdict"], summary["exit_code"]) == ("NO-VERDICT", 2)
    assert summary["no_verdict_reason"] == "the run was interrupted before it completed"
    assert summary["requirements"][0]["status"] == "failed"  # what ran is still reported
    markdown = render_markdown(summary)
    assert markdown.startswith("# DRA conformance: **NO VERDICT**")
    assert "No verdict: the run was interrupted before it completed." in markdown
    assert "CONFORMANT" not in markdown


def _old_conformant(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    old = {"run": {"id": "old"}, "verdict": "CONFORMANT", "exit_code": 0, "requirements": []}
    (directory / "summary.json").write_text(json.dumps(old))
    (directory / "summary.md").write_text("# DRA conformance: **CONFORMANT**\n")
    (directory / "junit.xml").write_text("<testsuites/>")


def test_the_fence_replaces_an_older_runs_verdict(tmp_path: Path) -> None:
    _old_conformant(tmp_path)
    assert own_summary(tmp_path, "new") is None  # another run's summary is never read back
    fence(tmp_path, "new")
    summary = own_summary(tmp_path, "new")
    assert summary is not None
    assert (summary["verdict"], summary["no_verdict_reason"]) == ("NO-VERDICT", RUNNING)
    assert "CONFORMANT" not in (tmp_path / "summary.md").read_text()
    assert not (tmp_path / "junit.xml").exists()


def _gate_against(baseline: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`dra-conformance gate --baseline BASELINE` on a cluster it cannot reach."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "gate",
            "--profile",
            "drivers/fake/profile.yaml",
            "--baseline",
            str(baseline),
            "--cluster",
            "existing",
            "--kubeconfig",
            str(tmp_path / "absent"),
            "--report-dir",
            str(tmp_path / "gate"),
        ],
        cwd=SUITE_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_gate_refuses_a_summary_without_a_verdict(tmp_path: Path) -> None:
    reason, detail = "the run could not be set up", "no kubeconfig; pass one"
    summary = write_no_verdict(tmp_path, "r9", reason, detail)
    assert no_verdict(summary) == (
        "run r9 has no verdict: the run could not be set up (no kubeconfig; pass one)"
    )
    assert no_verdict({"verdict": "PASSED-PARTIAL", "requirements": []}) is None
    result = _gate_against(tmp_path / "summary.json", tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "run r9 has no verdict: the run could not be set up" in result.stderr


def test_the_gate_stops_when_its_run_has_no_verdict(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    stored = build_summary(
        run=RunInfo(id="base", started=0.0, finished=1.0),
        facts=None,
        catalog=CATALOG,
        records=[],
    )
    (baseline / "summary.json").write_text(json.dumps(stored))
    result = _gate_against(baseline, tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "has no verdict: the run could not be set up" in result.stderr, output
    assert "Traceback" not in output
    assert not (tmp_path / "gate" / "gate.json").exists()


def test_a_partial_rehearsal_passes() -> None:
    rehearsed = {
        "run": {"id": "rh"},
        "verdict": "PASSED-PARTIAL",
        "verdict_scope": ["upgrade"],
        "requirements": [{"id": "DRA-UPG-001", "suite": "upgrade", "status": "passed"}],
    }
    assert rehearsal_of(rehearsed, "v1.36.3", "v1.37.2").passed
