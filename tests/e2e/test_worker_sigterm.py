"""SIGTERM of one xdist worker mid-test (an OOM killer's polite first step, a CI runner
reaping children): the worker takes the Ctrl-C path, so it uncordons the node its test
cordoned and deletes its namespace right away, while the rest of the run goes on; the run still
ends with nothing of it left on the cluster, and its verdict is not CONFORMANT."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
from pathlib import Path

from leftovers_check import NotYet, cordoning_worker, left_of, poll, run_cmd

from conformance.cluster import kind
from conformance.kube.client import K8sClients
from conformance.model.profile import SUITE_ROOT, Profile


def test_sigterm_of_a_worker_undoes_its_test(
    kind_cluster: kind.KindCluster, fake_driver: Profile, k8s: K8sClients, tmp_path: Path
) -> None:
    run_id = f"sigterm-{secrets.token_hex(4)}"
    report_dir = tmp_path / "report"
    run = subprocess.Popen(
        run_cmd(
            kind_cluster.name, run_id, report_dir, "-n", "2", "--dra-requirement", "DRA-DRAIN-001"
        ),
        cwd=SUITE_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        worker = cordoning_worker(run, k8s, run_id)
        assert worker != run.pid, "the cordon must be the worker's, not the controller's"
        os.kill(worker, signal.SIGTERM)

        def worker_undid_its_test() -> dict[str, list[str]]:
            left = left_of(k8s, run_id)
            live = [
                n.metadata.name
                for n in k8s.core.list_namespace(
                    label_selector=f"dra-conformance.io/run={run_id}"
                ).items
                if n.metadata.deletion_timestamp is None
            ]
            if left["cordons"] or live:
                raise NotYet(f"still cordoned or namespaces not being deleted: {left}")
            return left

        poll(worker_undid_its_test, timeout=60, interval=0.5)
        output, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=30)
    assert not any(left_of(k8s, run_id).values()), (left_of(k8s, run_id), output[-3000:])
    summary = report_dir / "summary.json"
    assert summary.is_file(), output[-3000:]
    verdict = json.loads(summary.read_text())["verdict"]
    assert verdict not in ("CONFORMANT", "PASSED-PARTIAL"), output[-3000:]
