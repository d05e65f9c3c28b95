"""What Kubernetes measured of the driver, on the real cluster: the kubelets' metrics read
through the API server, a run's Driver operations table against the pods it started, and a run
whose account may not read the kubelets' metrics (the least-privilege role without nodes/proxy):
"not available (why)", and its verdict all the same."""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from claim_pods import ClaimPodWatch
from control_plane_figures import assert_control_plane_figures
from kube_apiserver.server import write_kubeconfig
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from runs import run_cli

from conformance.kube.client import K8sClients
from conformance.metrics.scrape import (
    CLAIMS_IN_USE,
    CONTROLLER_MANAGER,
    GRPC,
    SCHEDULER,
    take_snapshot,
)
from conformance.model.profile import SUITE_ROOT

TOLERANCE = 0.10


def test_a_snapshot_reads_every_kubelet_and_the_control_plane_components(
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
    # the suite's kind cluster runs both where the API server's pod proxy reaches and may read
    # them (kindconfig.CONTROL_PLANE_ARGS); kubeadm's own binds them to 127.0.0.1
    assert snapshot.unavailable == {}, snapshot.unavailable
    assert {"kube-scheduler", "kube-controller-manager"} <= set(snapshot.sources)


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
    _assert_every_call_is_in_a_tests_figures(summary, report, rows["NodePrepareResources"])
    assert_control_plane_figures(ops)


def _assert_every_call_is_in_a_tests_figures(
    summary: dict, report: Path, run_row: dict[str, Any]
) -> None:
    """Each test's own figures (its window on its nodes) hold every prepare of the run: their
    sum is at least the run's count (more where tests shared a node), none exceeds it, and
    each measured test's Allure page has the table."""
    measured = {
        t["nodeid"]: r
        for t in summary["tests"]
        for r in t.get("driver_calls") or ()
        if r["method"] == "NodePrepareResources"
    }
    assert measured, "no test carries its own driver figures (tests[].driver_calls)"
    total = sum(r["calls"] for r in measured.values())
    assert total >= (1 - TOLERANCE) * run_row["count"], (total, run_row, measured)
    assert all(r["calls"] <= run_row["count"] for r in measured.values()), measured
    attached = [
        a
        for path in (report / "allure-results").glob("*-container.json")
        for fixture in json.loads(path.read_text()).get("afters") or ()
        for a in fixture.get("attachments") or ()
        if a["name"] == "driver calls (kubelet)"
    ]
    assert len(attached) >= len(measured), (len(attached), sorted(measured))
    table = (report / "allure-results" / attached[0]["source"]).read_text()
    assert "NodePrepareResources" in table and "mean" in table, table


RBAC = SUITE_ROOT / "deploy/rbac/dra-conformance.yaml"
NO_PROXY_REQUIREMENT = "DRA-CORE-004"


def _role_without_node_proxy() -> list[dict]:
    """The in-cluster account's ClusterRole rules, the kubelet-metrics rule taken out."""
    [role] = [d for d in yaml.safe_load_all(RBAC.read_text()) if d and d["kind"] == "ClusterRole"]
    rules = [r for r in role["rules"] if "nodes/proxy" not in r.get("resources", ())]
    assert len(rules) == len(role["rules"]) - 1, "deploy/rbac lost its nodes/proxy rule"
    return rules


@pytest.fixture()
def no_proxy_kubeconfig(kind_cluster, k8s: K8sClients, tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig for a ServiceAccount bound to that role (removed afterwards)."""
    name, namespace = f"dra-no-proxy-{secrets.token_hex(3)}", "default"
    rbac = client.RbacAuthorizationV1Api(k8s.api_client)
    k8s.core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    rbac.create_cluster_role({"metadata": {"name": name}, "rules": _role_without_node_proxy()})
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        }
    )
    try:
        token = k8s.core.create_namespaced_service_account_token(
            name, namespace, {"spec": {"expirationSeconds": 3600}}
        ).status.token
        admin = yaml.safe_load(Path(kind_cluster.kubeconfig).read_text())
        cluster = admin["clusters"][0]["cluster"]
        ca = base64.b64decode(cluster["certificate-authority-data"])
        yield write_kubeconfig(tmp_path / "no-proxy.kubeconfig", cluster["server"], token, ca)
    finally:
        for delete in (
            lambda: rbac.delete_cluster_role_binding(name),
            lambda: rbac.delete_cluster_role(name),
            lambda: k8s.core.delete_namespaced_service_account(name, namespace),
        ):
            try:
                delete()
            except ApiException as exc:
                if exc.status != 404:
                    raise


def test_a_run_that_may_not_read_kubelet_metrics_says_so_and_keeps_its_verdict(
    kind_cluster, fake_driver, no_proxy_kubeconfig: Path, tmp_path: Path
) -> None:
    report = tmp_path / "report"
    result = run_cli(
        kind_cluster.name,
        report,
        "--cluster",
        "existing",
        "--kubeconfig",
        str(no_proxy_kubeconfig),
        "--dra-skip-install",
        "--dra-requirement",
        NO_PROXY_REQUIREMENT,
        run_id=f"e2e-no-proxy-{secrets.token_hex(3)}",
    )
    output = result.stdout[-4000:] + result.stderr[-4000:]
    summary = json.loads((report / "summary.json").read_text())
    assert (result.returncode, summary["verdict"]) == (0, "PASSED-PARTIAL"), output
    ops = summary["driver_operations"]
    assert ops["grpc"] is None and ops["kubelet_operations"] is None, ops
    why = ops["unavailable"]["grpc"]
    assert "forbidden (HTTP 403)" in why and "nodes/proxy" in why, why
    assert all(state.startswith("not available") for state in ops["sources"].values()), ops
    # the components are readable: what stops this account is its RBAC, not their arguments
    assert "to measure it" not in json.dumps(ops["unavailable"]), ops["unavailable"]
    text = (report / "summary.md").read_text()
    assert "- kubelet → driver (gRPC): not available (kubelet " in text, text
    assert "forbidden (HTTP 403)" in text
