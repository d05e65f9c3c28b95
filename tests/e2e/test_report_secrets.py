"""No secret reaches a report: the run's kubeconfig carries a bearer token, a Secret with a
random value sits in the run's test namespace and in the driver's namespace, and a requirement
fails (so diagnostics are written); neither value is in any file under the report directory nor
in any member of the evidence bundle.

The token is added to the kind user, which also has a client certificate: the API server's
authenticators are a union with x509 first, so the certificate authenticates and the unknown
token is ignored (the run's success against the cluster proves it).
"""

from __future__ import annotations

import base64
import secrets
import subprocess
import sys
import tarfile
import threading
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client.exceptions import ApiException
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from conformance.cluster import kind
from conformance.kube.client import K8sClients
from conformance.model.naming import RUN_LABEL
from conformance.model.profile import SUITE_ROOT, Profile

FAKE_PROFILE = SUITE_ROOT / "drivers/fake/profile.yaml"
DRIVER_NAMESPACE = "dra-fake-driver"


def _kubeconfig_with_token(source: Path, target: Path, token: str) -> None:
    config = yaml.safe_load(source.read_text())
    for user in config["users"]:
        user["user"]["token"] = token
    target.write_text(yaml.safe_dump(config))


def _failing_profile(target: Path) -> None:
    """The fake driver's profile, preinstalled, whose verification looks for env vars the driver
    never sets: DRA-CORE-001 fails and writes diagnostics."""
    profile = yaml.safe_load(FAKE_PROFILE.read_text())
    profile["install"] = {"method": "preinstalled"}
    profile["verification"]["nameRegex"] = "^DRA_NEVER_SET_"
    target.write_text(yaml.safe_dump(profile))


def _secret(name: str, namespace: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"password": base64.b64encode(value.encode()).decode()},
    }


class NotYet(Exception):
    pass


def _plant_in_test_namespace(
    k8s: K8sClients, run_id: str, value: str, planted: list[str], stop: threading.Event
) -> None:
    """Put a Secret into the run's test namespace as soon as it exists."""

    def once() -> None:
        if stop.is_set():
            return
        for ns in k8s.core.list_namespace(label_selector=f"{RUN_LABEL}={run_id}").items:
            try:
                k8s.core.create_namespaced_secret(
                    ns.metadata.name, _secret("planted", ns.metadata.name, value)
                )
            except ApiException as exc:
                if exc.status not in (403, 404, 409):  # terminating / gone / done
                    raise
                continue
            planted.append(ns.metadata.name)
            return
        raise NotYet("no test namespace yet")

    retry(
        retry=retry_if_exception_type(NotYet),
        stop=stop_after_delay(240),
        wait=wait_fixed(0.2),
        reraise=True,
    )(once)()


def _report_texts(report_dir: Path) -> dict[str, bytes]:
    """Every file under the report directory, and every member of the evidence bundle."""
    files = {
        str(p.relative_to(report_dir)): p.read_bytes() for p in report_dir.rglob("*") if p.is_file()
    }
    with tarfile.open(report_dir / "evidence.tar.gz") as tar:
        for member in tar.getmembers():
            extracted = tar.extractfile(member)
            if extracted is not None:
                files[f"evidence.tar.gz:{member.name}"] = extracted.read()
    return files


def test_no_token_or_secret_in_reports(
    kind_cluster: kind.KindCluster,
    fake_driver: Profile,
    workload_image: str,
    k8s: K8sClients,
    tmp_path: Path,
) -> None:
    token = f"dratoken{secrets.token_hex(16)}"
    secret_value = f"drasecret{secrets.token_hex(16)}"
    kubeconfig, profile = tmp_path / "kubeconfig", tmp_path / "profile.yaml"
    _kubeconfig_with_token(Path(kind_cluster.kubeconfig), kubeconfig, token)
    _failing_profile(profile)
    driver_secret = f"planted-{secrets.token_hex(3)}"
    k8s.core.create_namespaced_secret(
        DRIVER_NAMESPACE, _secret(driver_secret, DRIVER_NAMESPACE, secret_value)
    )
    run_id = f"secrets-{secrets.token_hex(4)}"
    report_dir = tmp_path / "report"
    planted: list[str] = []
    stop = threading.Event()
    planter = threading.Thread(
        target=_plant_in_test_namespace, args=(k8s, run_id, secret_value, planted, stop)
    )
    planter.start()
    try:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "conformance.cli",
                "run",
                "--profile",
                str(profile),
                "--cluster",
                "existing",
                "--kubeconfig",
                str(kubeconfig),
                "--run-id",
                run_id,
                "--report-dir",
                str(report_dir),
                "--dra-workload-image",
                workload_image,
                "--dra-requirement",
                "DRA-CORE-001",
            ],
            cwd=SUITE_ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        stop.set()
        planter.join(timeout=250)
        k8s.core.delete_namespaced_secret(driver_secret, DRIVER_NAMESPACE)
    output = run.stdout[-3000:] + run.stderr[-3000:]
    assert run.returncode == 1, f"DRA-CORE-001 should fail (NON-CONFORMANT): {output}"
    assert planted, "the Secret was never planted in the run's test namespace"
    files = _report_texts(report_dir)
    assert any(name.startswith("diagnostics/") for name in files), sorted(files)
    # the scheduler's log is there too (kind runs it as a kubeadm static pod), redacted as well
    assert any("/control-plane/kube-scheduler-" in name for name in files), sorted(files)
    assert any(name.startswith("evidence.tar.gz:") for name in files)
    leaks = [
        f"{name} holds the {what}"
        for name, data in files.items()
        for what, value in (("bearer token", token), ("Secret's value", secret_value))
        if value.encode() in data or base64.b64encode(value.encode()) in data
    ]
    assert not leaks, leaks
