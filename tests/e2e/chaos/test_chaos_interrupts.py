"""Chaos: a run with -n 4 interrupted the way CI and people interrupt it.

- Ctrl-C (SIGINT to the whole process group, as a terminal sends it) about a third into a run;
- SIGKILL of one xdist worker in the middle of a test that cordoned a node.

After each, and after the cleanup it needs: nothing of the run is left on the cluster
(namespaces, claims, DeviceTaintRules, PriorityClasses, cordons, injected faults), the tests it
cut short are reported as error or not-run with the cause, summary.json is still written, and
the verdict is never CONFORMANT (a Ctrl-C'd run has none: NO-VERDICT, exit 2), and the report
the interrupted run wrote passes its own `verify`: its files agree (unsigned, exit 3).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
from pathlib import Path

import pytest
from chaos_run import CUT_SHORT, nothing_left, start, statuses_of, summary_of
from leftovers_check import NotYet, cli, cordoning_worker, poll

from conformance.cluster import kind
from conformance.kube.client import K8sClients
from conformance.model.naming import RUN_LABEL
from conformance.model.profile import SUITE_ROOT, Profile

pytestmark = pytest.mark.e2e

# Eleven requirements, four of them cordoning or draining a node: enough for a third.
SELECTION = ("scenarios/claim_deletion", "scenarios/node_drain")


def test_ctrl_c_a_third_into_a_run(
    kind_cluster: kind.KindCluster, fake_driver: Profile, k8s: K8sClients, tmp_path: Path
) -> None:
    run_id = f"sigint-{secrets.token_hex(4)}"
    report_dir = tmp_path / "report"
    run = start(kind_cluster.name, run_id, report_dir, *SELECTION)
    started: set[str] = set()
    try:

        def a_third_started() -> None:
            if run.poll() is not None:
                pytest.fail(f"the run ended (exit {run.returncode}) before a third of it")
            listing = k8s.core.list_namespace(label_selector=f"{RUN_LABEL}={run_id}")
            started.update(n.metadata.name for n in listing.items)
            if len(started) < 4:
                raise NotYet(f"{len(started)} of the run's tests started")

        poll(a_third_started, timeout=600, interval=0.5)  # a loaded machine sets up slowly
        os.killpg(run.pid, signal.SIGINT)
        output, _ = run.communicate(timeout=240)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=30)
    assert run.returncode == 2, f"exit {run.returncode} after Ctrl-C:\n{output[-3000:]}"
    summary = summary_of(report_dir, output)
    # the test the interrupt hit is no evidence against the driver: no verdict at all
    assert (summary["verdict"], summary["exit_code"]) == ("NO-VERDICT", 2), output[-3000:]
    assert summary["no_verdict_reason"] == "the run was interrupted before it completed"
    assert summary["run"]["id"] == run_id
    statuses = statuses_of(summary)
    assert any(s in CUT_SHORT for s in statuses.values()), statuses
    assert_verify_agrees(report_dir, summary)
    nothing_left(k8s, run_id, output)


def assert_verify_agrees(report_dir: Path, summary: dict) -> None:
    """The report a cut-short run wrote passes its own `verify` (unsigned, the files agree)."""
    verify = subprocess.run(
        cli("verify", str(report_dir)), cwd=SUITE_ROOT, capture_output=True, text=True, timeout=120
    )
    said = verify.stdout + verify.stderr
    assert verify.returncode == 3, f"verify exit {verify.returncode}: {said}"
    agree = f"unsigned: the files agree with each other ({summary['verdict_text']}, "
    assert said.startswith(agree), said


def test_sigkill_of_a_worker_mid_test(
    kind_cluster: kind.KindCluster, fake_driver: Profile, k8s: K8sClients, tmp_path: Path
) -> None:
    run_id = f"workerkill-{secrets.token_hex(4)}"
    report_dir = tmp_path / "report"
    run = start(
        kind_cluster.name,
        run_id,
        report_dir,
        # One test: a second one could wait on the node the killed worker left cordoned
        # until the end-of-run sweep (seen once: the run outlived the wait below).
        "--dra-requirement",
        "DRA-DRAIN-001",
    )
    try:
        worker = cordoning_worker(run, k8s, run_id)
        assert worker != run.pid, "the cordon must be the worker's, not the controller's"
        os.kill(worker, signal.SIGKILL)
        output, _ = run.communicate(timeout=600)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=30)
    summary = summary_of(report_dir, output)
    statuses = statuses_of(summary)
    assert statuses.get("DRA-DRAIN-001") in CUT_SHORT, (statuses, output[-3000:])
    assert "crash" in output.lower() or "worker" in output.lower(), output[-3000:]
    assert_verify_agrees(report_dir, summary)
    # The worker undid nothing itself; the controller's end-of-run sweep covers it.
    nothing_left(k8s, run_id, output)
