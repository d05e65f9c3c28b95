"""The fake driver installed with `install.method: helm` (its chart, drivers/fake/chart) on the
shared e2e cluster: helm install, readiness, then the vendor's loop through `dra-conformance run`
with the helm profile: a driver-update requirement (it patches the plugin DaemonSet's image and
puts it back), a new driver image, a quick requirement again, whose `helm upgrade` must meet no
field-manager conflict; helm uninstall. The manifest install is restored afterwards, so the
order of the e2e files does not matter."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from runs import run_cli

from conformance import docker_client
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


def _retag_on_nodes(kind_cluster: kind.KindCluster, ref: str, new_ref: str) -> None:
    """`new_ref` on every node, naming the image `ref` names: what a rebuilt driver image
    changes for the chart is its tag; loading a truly rebuilt one into three nodes takes
    ~2 minutes (`kind load`), the tag in the nodes' containerd a second."""
    client = docker_client.client()
    for node in kind_cluster.nodes():
        code, out = client.containers.get(node).exec_run(
            ["ctr", "-n", "k8s.io", "images", "tag", "--force", ref, new_ref]
        )
        assert code == 0, f"ctr images tag on {node}: {out.decode(errors='replace')}"


def _rebuilt_profile(tmp_path: Path, image: str) -> Path:
    """profile-helm.yaml with the driver image `image` (prebuilt) instead of the builder's."""
    document = yaml.safe_load(HELM_PROFILE.read_text())
    document["install"]["chart"] = str(HELM_PROFILE.parent / document["install"]["chart"])
    document["install"]["image"] = {"ref": image}
    path = tmp_path / "profile-rebuilt.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _template_owners(daemonset: Any) -> set[str]:
    """The managers that own a field of the DaemonSet's pod template."""
    return {
        entry.manager
        for entry in daemonset.metadata.managed_fields or ()
        if "f:template" in ((entry.fields_v1 or {}).get("f:spec") or {})
    }


def _passed(report: Path, result: subprocess.CompletedProcess) -> dict[str, str]:
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    summary = json.loads((report / "summary.json").read_text())
    return {r["id"]: r["status"] for r in summary["requirements"] if r["status"] != "not-run"}


def test_helm_installed_driver_passes_and_a_rebuilt_one_installs_after_a_driver_update(
    kind_cluster: kind.KindCluster, helm_driver: Profile, k8s: K8sClients, tmp_path: Path
) -> None:
    method = helm_driver.install
    assert isinstance(method, HelmInstall)
    namespace, name = (
        helm_driver.readiness.daemonset_namespace,
        helm_driver.readiness.daemonset_name,
    )
    ds = k8s.apps.read_namespaced_daemon_set(name, namespace)
    assert ds.metadata.annotations.get("meta.helm.sh/release-name") == method.release
    assert ds.metadata.labels.get("app.kubernetes.io/managed-by") == "Helm"
    assert _release_revisions(k8s, method) == ["1"]
    stamp = int(time.time())

    # 1. A driver-update requirement patches the plugin DaemonSet's image (DRA-UPD-002 sets one
    # no node has, then puts the original back; DRA-UPD-001 changes only an annotation here).
    first = tmp_path / "first"
    result = run_cli(
        kind_cluster.name, first, "--dra-requirement", "DRA-UPD-002",
        run_id=f"e2e-rerun-1-{stamp}", profile=str(HELM_PROFILE), timeout=900,
    )  # fmt: skip
    assert _passed(first, result) == {"DRA-UPD-002": "passed"}
    # The run installed through helm too: `helm upgrade --install` made revision 2, no conflict.
    assert _release_revisions(k8s, method) == ["1", "2"]
    # It gave back what it took: helm alone owns the template again, as after its install.
    daemonset = k8s.apps.read_namespaced_daemon_set(name, namespace)
    assert _template_owners(daemonset) == {"helm"}, daemonset.metadata.managed_fields
    [container] = daemonset.spec.template.spec.containers

    # 2. The vendor rebuilds the driver: a new image tag, installed by the next run.
    rebuilt = f"{container.image.rpartition(':')[0]}:rerun-{stamp}"
    _retag_on_nodes(kind_cluster, container.image, rebuilt)
    second = tmp_path / "second"
    result = run_cli(
        kind_cluster.name, second, "--dra-requirement", "DRA-CORE-001",
        run_id=f"e2e-rerun-2-{stamp}", profile=str(_rebuilt_profile(tmp_path, rebuilt)),
        timeout=900,
    )  # fmt: skip
    assert "conflict" not in result.stdout + result.stderr
    assert _passed(second, result) == {"DRA-CORE-001": "passed"}
    # `helm upgrade` applied the new image over what the driver-update run had changed.
    assert _release_revisions(k8s, method) == ["1", "2", "3"]
    daemonset = k8s.apps.read_namespaced_daemon_set(name, namespace)
    assert [c.image for c in daemonset.spec.template.spec.containers] == [rebuilt]
