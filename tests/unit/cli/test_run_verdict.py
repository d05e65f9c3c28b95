"""`dra-conformance run` reports this run's verdict or none, with no cluster needed: a report
directory holding an older CONFORMANT summary and a run that cannot be set up end with exit 2,
one error line, and a summary that says no verdict with this run's id."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conformance.suite_root import SUITE_ROOT


def _stale_report(directory: Path) -> None:
    directory.mkdir(parents=True)
    old = {
        "schema": "dra-conformance.io/summary/v1",
        "run": {"id": "an-older-run"},
        "verdict": "CONFORMANT",
        "exit_code": 0,
        "requirements": [],
    }
    (directory / "summary.json").write_text(json.dumps(old))
    (directory / "summary.md").write_text("# DRA conformance: **CONFORMANT**\n")


def _run(report_dir: Path, run_id: str, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "conformance.cli",
        "run",
        "--profile",
        "drivers/fake/profile.yaml",
        "--cluster",
        "existing",
        "--kubeconfig",
        "/nonexistent",
        "--report-dir",
        str(report_dir),
        "--run-id",
        run_id,
        *extra,
    ]
    return subprocess.run(argv, cwd=SUITE_ROOT, capture_output=True, text=True, timeout=300)


def test_a_run_that_cannot_be_set_up_never_reports_an_older_verdict(tmp_path: Path) -> None:
    report = tmp_path / "report"
    _stale_report(report)
    result = _run(report, "fresh-run")
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "CONFORMANT" not in output
    errors = [line for line in output.splitlines() if "dra-conformance: error:" in line]
    assert errors == [
        "dra-conformance: error: kubeconfig /nonexistent does not exist; pass --kubeconfig "
        "PATH (and --context NAME) for an existing cluster, or let the run make a kind "
        "cluster (--cluster kind)"
    ], output
    assert "_pytest.outcomes.Exit" not in output and "pytest exit code" not in output
    assert output.count("kubeconfig /nonexistent does not exist") == 1, output
    summary = json.loads((report / "summary.json").read_text())
    assert summary["run"]["id"] == "fresh-run"
    assert (summary["verdict"], summary["exit_code"]) == ("NO-VERDICT", 2)
    assert summary["no_verdict_reason"] == "the run could not be set up"
    assert "kubeconfig /nonexistent does not exist" in summary["no_verdict_detail"]
    markdown = (report / "summary.md").read_text()
    assert markdown.startswith("# DRA conformance: **NO VERDICT**") and "fresh-run" in markdown
    assert "NO VERDICT: the run could not be set up" in result.stderr.splitlines()[-1]


def test_a_run_pytest_refuses_has_no_verdict_either(tmp_path: Path) -> None:
    report = tmp_path / "report"
    _stale_report(report)
    result = _run(report, "refused-run", "--no-such-pytest-option")
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "CONFORMANT" not in output
    summary = json.loads((report / "summary.json").read_text())
    assert (summary["run"]["id"], summary["verdict"]) == ("refused-run", "NO-VERDICT")
    assert summary["no_verdict_reason"] == (
        "pytest stopped before the run could judge (pytest exit code 4)"
    )


def _run_with_profile(
    profile: Path, report_dir: Path, run_id: str
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "conformance.cli", "run", "--profile", str(profile)]
    argv += ["--cluster", "existing", "--kubeconfig", "/nonexistent"]
    argv += ["--report-dir", str(report_dir), "--run-id", run_id]
    return subprocess.run(argv, cwd=SUITE_ROOT, capture_output=True, text=True, timeout=300)


def test_a_run_refused_for_its_profile_leaves_no_older_verdict_standing(tmp_path: Path) -> None:
    profile = tmp_path / "profile.yaml"
    profile.write_text("driver: [not, a, name]\n")
    report = tmp_path / "report"
    _stale_report(report)
    result = _run_with_profile(profile, report, "bad-profile-run")
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "CONFORMANT" not in output
    summary = json.loads((report / "summary.json").read_text())
    assert (summary["run"]["id"], summary["verdict"]) == ("bad-profile-run", "NO-VERDICT")
    assert summary["no_verdict_reason"] == "the run could not be set up"
    assert "fix the profile" in summary["no_verdict_detail"]
    assert (report / "summary.md").read_text().startswith("# DRA conformance: **NO VERDICT**")


def test_a_run_refused_for_its_profile_creates_no_report_directory(tmp_path: Path) -> None:
    profile = tmp_path / "profile.yaml"
    profile.write_text("driver: [not, a, name]\n")
    report = tmp_path / "new-report"
    result = _run_with_profile(profile, report, "bad-profile-run")
    assert result.returncode == 2, result.stdout + result.stderr
    assert not report.exists()
