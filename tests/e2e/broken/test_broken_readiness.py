"""A driver that never becomes ready still gets a report, on the real cluster.

The fake driver's `invalid-slice` misbehaviour puts a device twice into one slice, which the
API server rejects; with the node's slices deleted the driver cannot publish them again, so
`dra-conformance run` (with a short timeouts.driverReady) waits in vain. The run must still end
with a report: DRA-CORE-002 failed with the API server's rejection, every other requirement
not run, NON-CONFORMANT and exit code 1. Like the other broken checks it holds an exclusive
lease on the cluster's lease book while the driver is broken, and leaves the driver healthy.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakedriver.client.channel import FakeDriverControl

from conformance.install import installer
from conformance.kube.client import K8sClients
from conformance.kube.readiness import selected_nodes
from conformance.model.profile import SUITE_ROOT, Profile
from conformance.run.cluster_lease_book import ClusterLeaseBook
from conformance.run.lease import DeviceLeaseBroker, LeaseRequest

pytestmark = pytest.mark.e2e

DRIVER_READY_S = 45
RUN_TIMEOUT_S = 600


def short_readiness_profile(profile: Path, directory: Path) -> Path:
    """The profile with a short timeouts.driverReady, written elsewhere (its relative manifest
    paths made absolute)."""
    document = yaml.safe_load(profile.read_text())
    install = document.get("install") or {}
    if install.get("manifests"):
        install["manifests"] = [str((profile.parent / m).resolve()) for m in install["manifests"]]
    document["timeouts"] = {**(document.get("timeouts") or {}), "driverReady": f"{DRIVER_READY_S}s"}
    path = directory / "profile-never-ready.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def junit_failures(path: Path) -> tuple[int, list[str]]:
    """(number of testcases, names of the failed ones)."""
    cases = list(ET.parse(path).getroot().iter("testcase"))
    failed = [str(c.get("name")) for c in cases if c.find("failure") is not None]
    return len(cases), failed


def delete_slices(k8s: K8sClients, driver: str, node: str) -> list[str]:
    listing = k8s.resource.list_resource_slice(
        field_selector=f"spec.driver={driver},spec.nodeName={node}"
    )
    names = [s.metadata.name for s in listing.items]
    for name in names:
        k8s.resource.delete_resource_slice(name)
    return names


def run_cli(cluster: str, profile: Path, report_dir: Path) -> subprocess.CompletedProcess:
    cmd = [
        str(Path(sys.executable).parent / "dra-conformance"),
        "run",
        "--profile",
        str(profile),
        "--name",
        cluster,
        "--report-dir",
        str(report_dir / "report"),
        "--run-id",
        f"broken-readiness-{secrets.token_hex(3)}",
        "--dra-skip-install",
        "--dra-lease-book-name",  # inside the test's exclusive lease of the cluster's book
        f"dra-conformance-leases-{secrets.token_hex(3)}",
        "--dra-html-report",
        "never",
        "--dra-charts",  # a verdict is all a check reads
        "never",
    ]
    return subprocess.run(
        cmd,
        cwd=SUITE_ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env={**os.environ},
    )


def test_a_driver_whose_slices_are_rejected_still_gets_a_report(
    fake_driver: Profile,
    kind_cluster: Any,
    k8s: K8sClients,
    tmp_path: Path,
    lease_book: ClusterLeaseBook,
) -> None:
    control = FakeDriverControl(k8s.core)
    node = selected_nodes(k8s, fake_driver)[0]
    broker = DeviceLeaseBroker(lease_book, {})
    lease = broker.acquire(
        LeaseRequest("broken-driver-check readiness", [], exclusive=True), timeout=1800
    )
    started = time.monotonic()
    try:
        control.set_misbehaviour("invalid-slice", True, node)
        control.wait_applied(node, timeout=60)
        assert delete_slices(k8s, fake_driver.driver, node), f"no slices on {node} to delete"
        # The driver's next publish is refused: its status says so (an older driver image
        # that does not know the misbehaviour would republish instead).
        control.wait_applied(
            node,
            timeout=90,
            predicate=lambda s: "is invalid" in str((s.get("pool") or {}).get("lastError")),
        )
        result = run_cli(
            kind_cluster.name, short_readiness_profile(fake_driver.source, tmp_path), tmp_path
        )
    finally:
        try:
            control.set_misbehaviour("invalid-slice", False, node)
            control.wait_applied(node, timeout=60)
            healthy = installer.wait_ready(
                fake_driver, str(kind_cluster.kubeconfig), None, timeout=120
            )
        finally:
            broker.release(lease)
    wall = time.monotonic() - started
    output = result.stdout + result.stderr
    explain = f"exit {result.returncode} after {wall:.0f}s\n{output[-6000:]}"

    assert result.returncode == 1, explain
    report = tmp_path / "report"
    summary = json.loads((report / "summary.json").read_text())
    assert summary["verdict"] == "NON-CONFORMANT", explain
    assert summary["setup_problem"].startswith("the driver never became ready"), explain
    status = {r["id"]: r for r in summary["requirements"]}
    core_002 = status.pop("DRA-CORE-002")
    assert core_002["status"] == "failed", explain
    # The API server's own words, read from the driver's log.
    assert "is invalid" in core_002["reason"] and "Duplicate value" in core_002["reason"], core_002[
        "reason"
    ]
    assert node in core_002["reason"], core_002["reason"]
    not_run = {rid for rid, r in status.items() if r["status"] == "not-run"}
    assert not_run == set(status), {rid: r["status"] for rid, r in status.items()}
    assert all("the driver never became ready" in r["reason"] for r in status.values())
    # The plugin's pods stayed ready: registration is not blamed.
    assert "DRA-CORE-001" in not_run

    total, failed = junit_failures(report / "junit.xml")
    assert total == summary["counts"]["tests"]["total"] > 1, total
    assert sorted(failed) == sorted(t.split("::")[-1] for t in core_002["tests"]), failed
    allure = list((report / "allure-results").glob("*-result.json"))
    assert len(allure) == total, (len(allure), total)

    assert healthy.ready, healthy
    print(f"broken readiness run: {wall:.0f}s wall, {total} tests reported")
