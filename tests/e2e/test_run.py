"""`dra-conformance run` end to end on the real cluster with the fake driver (issue: harness)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.kube.client import K8sClients
from conformance.profile import SUITE_ROOT
from conformance.report.junit import parse_junit_counts

RUN_LABEL = "dra-conformance.io/run"


def _run_cli(
    cluster: str,
    report_dir: Path,
    *extra: str,
    run_id: str,
    profile: str = "drivers/fake/profile.yaml",
    timeout: float = 1800,
) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "conformance.cli",
        "run",
        "--profile",
        profile,
        "--name",
        cluster,
        "--report-dir",
        str(report_dir),
        "--run-id",
        run_id,
        *extra,
    ]
    return subprocess.run(cmd, cwd=SUITE_ROOT, capture_output=True, text=True, timeout=timeout)


def _run_namespaces(k8s: K8sClients, run_id: str) -> list[str]:
    items = k8s.core.list_namespace(label_selector=f"{RUN_LABEL}={run_id}").items
    return [n.metadata.name for n in items if n.status.phase != "Terminating"] + [
        n.metadata.name for n in items if n.status.phase == "Terminating"
    ]


@pytest.fixture(scope="module")
def whole_suite_runs(request, kind_cluster, fake_driver, tmp_path_factory) -> dict[str, dict]:
    """The whole suite, serially and with -n 4, against the fake driver (one run each)."""
    runs: dict[str, dict] = {}
    for workers in ("0", "4"):
        report = tmp_path_factory.mktemp(f"run-n{workers}") / "report"
        start = time.monotonic()
        result = _run_cli(
            kind_cluster.name,
            report,
            "-n",
            workers,
            run_id=f"e2e-all-n{workers}-{int(time.time())}",
        )
        runs[workers] = {
            "result": result,
            "output": result.stdout + result.stderr,
            "report": report,
            "wall_s": time.monotonic() - start,
            "summary": json.loads((report / "summary.json").read_text())
            if (report / "summary.json").is_file()
            else None,
        }
    serial, parallel = runs["0"]["wall_s"], runs["4"]["wall_s"]
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:  # a measurement for bench/suite.md, not an assertion
        reporter.write_line(
            f"\nwhole suite on the fake driver: serial {serial:.0f} s, -n 4 {parallel:.0f} s, "
            f"speed-up {serial / parallel:.2f}x"
        )
    return runs


@pytest.mark.parametrize("workers", ["0", "4"])
def test_whole_suite_conformant(whole_suite_runs, workers):
    run = whole_suite_runs[workers]
    assert run["result"].returncode == 0, run["output"][-12000:]
    assert "verdict CONFORMANT" in run["output"]
    summary, report = run["summary"], run["report"]
    assert summary["verdict"] == "CONFORMANT"
    core = [r for r in summary["requirements"] if r["id"].startswith("DRA-CORE-")]
    assert len(core) == 6 and {r["status"] for r in core} == {"passed"}, core
    # SHOULD and MAY must pass too, not only MUST; the fake driver has every capability, so
    # only a cluster fact (a gate, a non-kind provider) may make one not applicable.
    not_passed = [r for r in summary["requirements"] if r["status"] != "passed"]
    assert [r for r in not_passed if r["status"] != "not-applicable"] == [], not_passed
    assert len(not_passed) <= 2, not_passed
    assert all(r["duration_s"] > 0 for r in summary["requirements"] if r["status"] == "passed")
    junit = parse_junit_counts(report / "junit.xml")
    assert junit.failures + junit.errors == 0
    passed = junit.tests - junit.failures - junit.errors - junit.skipped
    assert summary["counts"]["tests"]["passed"] == passed
    for name in (
        "summary.md",
        "evidence.tar.gz",
        "allure-results/environment.properties",
        "allure-results/categories.json",
    ):
        assert (report / name).exists(), name
    assert "requirements reached" in run["output"]  # live progress


def test_parallel_run_gives_the_same_results_as_serial(whole_suite_runs):
    def statuses(workers: str) -> dict[str, str]:
        summary = whole_suite_runs[workers]["summary"]
        assert summary is not None, whole_suite_runs[workers]["output"][-4000:]
        return {r["id"]: r["status"] for r in summary["requirements"]}

    assert statuses("4") == statuses("0")


def test_broken_profile_exits_nonzero_with_clear_message(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: dra-conformance.io/v1alpha1\nkind: DriverProfile\ndriver: Not_A_Name\n"
    )
    result = _run_cli("unused", tmp_path / "report", run_id="e2e-bad", profile=str(bad))
    assert result.returncode == 2
    assert "driver: expected a driver name" in result.stderr
    assert "deviceClasses: required field is missing" in result.stderr
    assert not (tmp_path / "report").exists()


def test_sigint_mid_run_leaves_no_test_namespace(kind_cluster, fake_driver, k8s, tmp_path):
    run_id = f"e2e-sigint-{int(time.time())}"
    cmd = [
        sys.executable,
        "-m",
        "conformance.cli",
        "run",
        "--profile",
        "drivers/fake/profile.yaml",
        "--name",
        kind_cluster.name,
        "--report-dir",
        str(tmp_path / "report"),
        "--run-id",
        run_id,
        "scenarios/core",
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=SUITE_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not _run_namespaces(k8s, run_id):
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.5)
        assert _run_namespaces(k8s, run_id), "no test namespace appeared within 300 s"
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    deadline = time.monotonic() + 120
    while _run_namespaces(k8s, run_id) and time.monotonic() < deadline:
        time.sleep(1)
    assert _run_namespaces(k8s, run_id) == [], output[-4000:]
