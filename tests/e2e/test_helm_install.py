"""The fake driver installed with `install.method: helm` (its chart, drivers/fake/chart) on the
shared e2e cluster: helm install, readiness, one quick requirement through `dra-conformance run`
with the helm profile, helm uninstall. The manifest install is restored afterwards, so the order
of the e2e files does not matter."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.cluster import kind
from conformance.install import installer
from conformance.kube.client import K8sClients
from conformance.model.profile import SUITE_ROOT, HelmInstall, Profile
from conformance.model.profile_parse import load_profile
from conformance.progress import Progress

HELM_PROFILE = SUITE_ROOT / "drivers/fake/profile-helm.yaml"


def _release_revisions(k8s: K8sClients, method: HelmInstall) -> list[str]:
    """Helm keeps one Secret per revision of a release (its storage driver's default)."""
    secrets = k8s.core.list_namespaced_secret(
        method.namespace, label_selector=f"owner=helm,name={method.release}"
    ).items
    return sorted(s.metadata.labels["version"] for s in secrets)


@pytest.fixture
def helm_driver(
    kind_cluster: kind.KindCluster, fake_driver: Profile, progress: Progress
) -> Iterator[Profile]:
    """The manifest-installed fake driver replaced by its Helm release; put back afterwards."""
    kubeconfig = str(kind_cluster.kubeconfig)
    target = installer.KindTarget(kind_cluster.name)
    profile = load_profile(HELM_PROFILE)
    installer.uninstall(fake_driver, kubeconfig, progress=progress)
    try:
        installer.install(profile, kubeconfig, None, target, progress)
        installer.wait_ready(profile, kubeconfig, progress=progress)
        yield profile
    finally:
        installer.uninstall(profile, kubeconfig, progress=progress)
        installer.install(fake_driver, kubeconfig, None, target, progress)
        installer.wait_ready(fake_driver, kubeconfig, progress=progress)


def test_helm_installed_driver_passes_a_requirement(
    kind_cluster: kind.KindCluster, helm_driver: Profile, k8s: K8sClients, tmp_path: Path
) -> None:
    method = helm_driver.install
    assert isinstance(method, HelmInstall)
    daemonset = helm_driver.readiness
    ds = k8s.apps.read_namespaced_daemon_set(
        daemonset.daemonset_name, daemonset.daemonset_namespace
    )
    assert ds.metadata.annotations.get("meta.helm.sh/release-name") == method.release
    assert ds.metadata.labels.get("app.kubernetes.io/managed-by") == "Helm"
    assert _release_revisions(k8s, method) == ["1"]

    report = tmp_path / "report"
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "run", "--profile", str(HELM_PROFILE)]
        + ["--name", kind_cluster.name, "--report-dir", str(report)]
        + ["--run-id", f"e2e-helm-{int(time.time())}", "--dra-requirement", "DRA-CORE-001"],
        cwd=SUITE_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    summary = json.loads((report / "summary.json").read_text())
    ran = {r["id"]: r["status"] for r in summary["requirements"] if r["status"] != "not-run"}
    assert ran == {"DRA-CORE-001": "passed"}, output[-3000:]
    # The run installed through helm too: `helm upgrade --install` made revision 2, no conflict.
    assert _release_revisions(k8s, method) == ["1", "2"]
