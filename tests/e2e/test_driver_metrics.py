"""What Kubernetes measured of the driver, on the real cluster: the kubelets' metrics read
through the API server, and a run's Driver operations table against the pods it started."""

from __future__ import annotations

import json
import time

from claim_pods import ClaimPodWatch
from runs import run_cli

from conformance.kube.client import K8sClients
from conformance.metrics.scrape import (
    CLAIMS_IN_USE,
    CONTROLLER_MANAGER,
    GRPC,
    SCHEDULER,
    take_snapshot,
)

TOLERANCE = 0.10


def test_a_snapshot_reads_every_kubelet_and_says_why_a_component_is_not_available(
    k8s: K8sClients, fake_driver
) -> None:
    snapshot = take_snapshot(k8s, (SCHEDULER, CONTROLLER_MANAGER))
    nodes = sorted(n.metadata.name for n in k8s.core.list_node().items)
    for node in nodes:
        metrics = snapshot.sources[f"kubelet {node}"]
        in_use = {s.label("driver_name") for s in metrics.gauges[CLAIMS_IN_USE]}
        assert "<any>" in in_use, f"kubelet {node}: {in_use}"
    # the driver's plugin registered on the workers: the kubelet has talked to it
    drivers = {
        series.label("driver_name")
        for node in nodes
        for series in snapshot.sources[f"kubelet {node}"].histograms.get(GRPC, [])
    }
    assert drivers <= {fake_driver.driver}
    # kind binds both to 127.0.0.1: the API server's proxy cannot reach them, and says so
    for component in ("kube-scheduler", "kube-controller-manager"):
        assert component not in snapshot.sources
        assert "localhost only" in snapshot.unavailable[component], snapshot.unavailable


def test_prepare_and_unprepare_counts_match_the_pods_the_run_started(
    kind_cluster, fake_driver, k8s: K8sClients, tmp_path
) -> None:
    """A run without faults or kubelet restarts (the core suite): one NodePrepareResources
    call per pod that needed its claims prepared, one NodeUnprepareResources per release."""
    report = tmp_path / "report"
    with ClaimPodWatch(k8s) as watched:
        result = run_cli(
            kind_cluster.name,
            report,
            "-n",
            "2",
            "scenarios/core",
            run_id=f"e2e-ops-{int(time.time())}",
        )
    summary = json.loads((report / "summary.json").read_text())
    assert result.returncode in (0, 3), result.stdout[-4000:] + result.stderr[-4000:]
    ops = summary["driver_operations"]
    assert ops.get("counter_resets") == [], ops
    rows = {r["method"]: r for r in ops["grpc"] if r["driver"] == fake_driver.driver}
    started = len(watched.started)
    assert started > 0
    for method in ("NodePrepareResources", "NodeUnprepareResources"):
        count = rows[method]["count"]
        assert abs(count - started) <= TOLERANCE * started, (method, count, started, rows)
        assert rows[method]["errors"] == 0, rows[method]
    assert "Driver operations" in (report / "summary.md").read_text()
