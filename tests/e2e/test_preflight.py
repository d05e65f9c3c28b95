"""A run on an existing cluster whose nodes cannot get the workload image stops before any
requirement runs: exit 2, one line naming the image and the remedy, no requirement failed, and
nothing of the run left on the cluster (conformance/plugin/preflight.py)."""

from __future__ import annotations

import json
import time

from runs import run_cli

from conformance.kube.client import K8sClients
from conformance.model.naming import RUN_LABEL

NO_SUCH_IMAGE = "localhost/dra-conformance/no-such-image:none"


def test_an_image_the_nodes_cannot_pull_stops_the_run_with_the_remedy(
    kind_cluster, fake_driver, k8s: K8sClients, tmp_path
):
    run_id = f"e2e-preflight-{int(time.time())}"
    report = tmp_path / "report"
    start = time.monotonic()
    result = run_cli(
        kind_cluster.name,
        report,
        "--cluster",
        "existing",
        "--kubeconfig",
        str(kind_cluster.kubeconfig),
        "--dra-skip-install",
        "--dra-workload-image",
        NO_SUCH_IMAGE,
        "--dra-requirement",
        "DRA-CORE-001",
        run_id=run_id,
        timeout=300,
    )
    elapsed = time.monotonic() - start
    output = result.stdout + result.stderr
    assert result.returncode == 2, output[-6000:]
    # One line says it all: the image, why, and what to do.
    lines = [line for line in output.splitlines() if NO_SUCH_IMAGE in line]
    assert lines, output[-6000:]
    line = lines[0]
    assert f"the cluster cannot run the workload image {NO_SUCH_IMAGE}" in line, line
    assert "the nodes cannot pull it (" in line, line
    assert "--dra-workload-image REF (any image with sh, env and sleep" in line, line
    assert "dra-conformance driver install --name NAME" in line, line
    # The pull failure ends it, not the 120 s podRunning timeout of a test (judged on what the
    # run says, not on a wall clock that a loaded machine stretches: 181 s at load 60).
    assert "ErrImagePull" in line or "ImagePullBackOff" in line, line
    assert "timed out" not in output, f"{elapsed:.0f} s\n{output[-3000:]}"
    # Never a failure of the driver: no requirement ran, none failed.
    assert "NON-CONFORMANT" not in output, output[-6000:]
    summary_path = report / "summary.json"
    if summary_path.is_file():  # a report of a run without a verdict
        summary = json.loads(summary_path.read_text())
        assert summary.get("verdict") != "NON-CONFORMANT", summary
        assert [r for r in summary.get("requirements", ()) if r["status"] == "failed"] == []
    # The preflight's namespace was the run's, and it is going.
    left = k8s.core.list_namespace(label_selector=f"{RUN_LABEL}={run_id}").items
    assert [n.metadata.name for n in left if not n.metadata.deletion_timestamp] == []
