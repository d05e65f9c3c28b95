"""The suite inside the cluster as a Sonobuoy plugin (deploy/sonobuoy/dra-conformance.yaml), on
the e2e kind cluster with the fake driver installed: the suite's image and Sonobuoy's own built
here and loaded into the nodes, the account made by the chart (deploy/chart/) for the selected
suites only, `sonobuoy run --wait`, `sonobuoy retrieve`, `sonobuoy results` listing every
requirement with its status; the verdict and every requirement's status in the tarball equal
those of a direct run of the same selection (`run --cluster existing`, as the cluster's admin).
A narrow selection keeps it short: the core suite, and the security suite, which must read every
workload of the cluster without cluster-admin."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from helpers.rbac_chart import render_account
from runs import run_cli
from sonobuoy_tools import sonobuoy_binary, sonobuoy_image

from conformance.cluster import kind, kind_images
from conformance.install.manifests import apply_manifests, delete_manifests
from conformance.kube.client import K8sClients
from conformance.model.profile import SUITE_ROOT, Profile
from conformance.progress import Progress

# Past the CI budget: the suite's and Sonobuoy's images in the nodes and the core suite run
# twice (bench/suite.md).
pytestmark = pytest.mark.e2e_by_hand

PLUGIN = SUITE_ROOT / "deploy/sonobuoy/dra-conformance.yaml"
NAMESPACE = "dra-conformance"
SUITES = ("core", "security")
SELECTION = " ".join(f"scenarios/{suite}" for suite in SUITES)
RESULTS = f"plugins/{NAMESPACE}/results/global"


@contextmanager
def _stage(times: dict[str, float], name: str) -> Iterator[None]:
    begin = time.monotonic()
    try:
        yield
    finally:
        times[name] = time.monotonic() - begin
        print(f"sonobuoy e2e stage {times[name]:7.0f} s  {name}", flush=True)


def _run(cmd: list[str], timeout: float) -> str:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{cmd[:3]} exit {result.returncode}:\n{result.stderr[-3000:]}"
    return result.stdout


def _suite_image(cluster: str) -> str:
    out = _run([sys.executable, "-m", "conformance.cli", "image", "--load", cluster], timeout=1800)
    return out.strip().splitlines()[-1]


def _plugin_file(directory: Path, image: str) -> Path:
    plugin = yaml.safe_load(PLUGIN.read_text())
    plugin["spec"]["image"] = image  # the content-tagged reference that was loaded
    for env in plugin["spec"]["env"]:
        if env["name"] == "DRA_CONFORMANCE_ARGS":
            env["value"] = SELECTION
    path = directory / "dra-conformance.yaml"
    path.write_text(yaml.safe_dump(plugin))
    return path


def _tarball_file(tarball: Path, name: str) -> bytes:
    with tarfile.open(tarball) as tar:
        member = tar.extractfile(f"{RESULTS}/{name}")
        assert member is not None, f"{name} missing from {tarball}"
        return member.read()


def test_sonobuoy_plugin_gives_the_direct_runs_verdict(
    kind_cluster: kind.KindCluster,
    fake_driver: Profile,
    k8s: K8sClients,
    progress: Progress,
    tmp_path: Path,
) -> None:
    times: dict[str, float] = {}
    kubeconfig = str(kind_cluster.kubeconfig)
    with _stage(times, "images (suite, sonobuoy)"):
        suite_ref = _suite_image(kind_cluster.name)
        sonobuoy = str(sonobuoy_binary(progress))
        aggregator = sonobuoy_image(Path(sonobuoy), progress)
        nodes = kind_cluster.nodes()
        kind_images.load_into_cluster(
            kind_cluster.kind, kind_cluster.name, nodes, aggregator, progress
        )
    rbac = render_account(NAMESPACE, SUITES, create_namespace=True)
    sonobuoy_ns = ["-n", NAMESPACE, "--kubeconfig", kubeconfig]
    try:
        apply_manifests(k8s, rbac)
        with _stage(times, "sonobuoy run --wait"):
            _run(
                [
                    sonobuoy,
                    "run",
                    *sonobuoy_ns,
                    # the RBAC made the namespace; an offline kind cluster has no DNS pods, and
                    # Sonobuoy's pods dial the aggregator's IP, not a name
                    "--skip-preflight=existingnamespace,dnscheck",
                    "--plugin",
                    str(_plugin_file(tmp_path, suite_ref)),
                    "--sonobuoy-image",
                    aggregator,
                    "--image-pull-policy",
                    "IfNotPresent",
                    "--wait=40",
                ],
                timeout=2700,
            )
        with _stage(times, "sonobuoy retrieve, results"):
            out = tmp_path / "retrieved"
            out.mkdir()
            tarball = Path(_run([sonobuoy, "retrieve", *sonobuoy_ns, str(out)], 300).strip())
            detailed = _run([sonobuoy, "results", str(tarball), "--mode", "detailed"], 300)
    finally:
        subprocess.run(
            [sonobuoy, "delete", *sonobuoy_ns, "--wait"], capture_output=True, timeout=600
        )
        delete_manifests(k8s, rbac)
    in_cluster = json.loads(_tarball_file(tarball, "summary.json"))
    for name in ("junit.xml", "summary.md", "allure-report/index.html", "evidence.tar.gz"):
        assert _tarball_file(tarball, name), name
    listed = {}
    for line in filter(None, map(str.strip, detailed.splitlines())):
        item = json.loads(line)
        if "name" in item:  # test cases; the last line is the cluster's health
            listed[item["name"].split()[0]] = item
    statuses = {r["id"]: r["status"] for r in in_cluster["requirements"]}
    assert statuses and set(listed) == set(statuses), detailed
    for rid, status in statuses.items():
        assert listed[rid]["details"]["system-out"] == f"status: {status}", listed[rid]
    assert in_cluster["cluster"]["provider"] == "in-cluster"
    security = {rid: s for rid, s in statuses.items() if rid.startswith("DRA-SEC-")}
    assert security and set(security.values()) == {"passed"}, (
        "the security suite in the cluster, as the chart's account for core and security",
        security,
        [r.get("reason") for r in in_cluster["requirements"] if r["id"] in security],
    )

    with _stage(times, "direct run"):
        report = tmp_path / "direct"
        direct = run_cli(
            kind_cluster.name,
            report,
            "--cluster",
            "existing",
            "--kubeconfig",
            kubeconfig,
            *SELECTION.split(),
            run_id="sonobuoy-direct",
        )
    summary = json.loads((report / "summary.json").read_text())
    assert summary["verdict"] not in ("NO-VERDICT",), direct.stderr[-2000:]
    assert in_cluster["verdict"] == summary["verdict"], (in_cluster["verdict_reasons"], direct)
    assert statuses == {r["id"]: r["status"] for r in summary["requirements"]}
    for name, seconds in times.items():
        print(f"{seconds:7.0f} s  {name}")
