"""`dra-conformance gate --baseline`: a platform team's gate against a stored run, on the real
cluster. The same driver gates green (exit 0); a driver that broke a MUST since the baseline
gates red (exit 1) and gate.md names the requirement. The runs select one requirement: each is
a partial pass (PASSED-PARTIAL, exit 0) in every format, and a partial baseline still gates.
The gate's own green run prepares claims 2 s slower (the fake driver's delay-prepare fault): the
gate flags the prepare p95 as a latency regression and draws the side-by-side chart, and still
passes, because latency is reported, never judged. The two-version form (`--from --to`) builds a
second node image, which is a bench run (bench/cluster.md), not a CI one."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from fakedriver.client.channel import ALL_NODES, FakeDriverControl
from gate_checks import assert_prepare_latency_regression
from runs import run_cli

from conformance.cluster import kind
from conformance.kube.client import K8sClients
from conformance.kube.readiness import selected_nodes
from conformance.model.profile import SUITE_ROOT, Profile

REQUIREMENT = "DRA-CORE-004"  # the container sees exactly its device
PREPARE_DELAY_S = 2.0
# the one requirement prepares one claim per run: compare operations with a single call
MIN_SAMPLES = "1"


def _gate(
    cluster: str, baseline: Path, report_dir: Path, *extra: str
) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "conformance.cli",
        "gate",
        "--profile",
        "drivers/fake/profile.yaml",
        "--baseline",
        str(baseline),
        "--name",
        cluster,
        "--report-dir",
        str(report_dir),
        *extra,
        "--dra-requirement",
        REQUIREMENT,
    ]
    return subprocess.run(cmd, cwd=SUITE_ROOT, capture_output=True, text=True, timeout=900)


def test_gate_against_a_baseline(
    kind_cluster: kind.KindCluster, fake_driver: Profile, k8s: K8sClients, tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline"
    stored = run_cli(
        kind_cluster.name,
        baseline,
        "--dra-requirement",
        REQUIREMENT,
        run_id=f"gate-base-{secrets.token_hex(3)}",
    )
    assert stored.returncode == 0, stored.stdout[-3000:] + stored.stderr[-2000:]
    # one requirement passed: a partial pass in every format, never CONFORMANT
    summary = json.loads((baseline / "summary.json").read_text())
    assert summary["verdict"] == "PASSED-PARTIAL", summary["verdict_reasons"]
    partial = summary["partial"]
    assert partial["selected"] == 1 and REQUIREMENT not in partial["not_selected"]
    assert len(partial["not_selected"]) == partial["total"] - 1 >= 30, partial
    title = f"PASSED (partial: 1 of {partial['total']} MUST selected) — not a certification"
    assert stored.stdout.strip().splitlines()[-1].endswith(f"verdict {title}"), stored.stdout
    assert partial["not_selected"][0] in stored.stdout.strip().splitlines()[-1]
    assert (baseline / "summary.md").read_text().startswith(f"# DRA conformance: **{title}**")
    junit = ET.parse(baseline / "junit.xml").getroot()
    properties = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert properties["dra_verdict"] == "PASSED-PARTIAL", properties
    assert "CONFORMANT" not in (baseline / "allure-results/environment.properties").read_text()

    control = FakeDriverControl(k8s.core)
    nodes = selected_nodes(k8s, fake_driver)
    control.delay_prepare(ALL_NODES, PREPARE_DELAY_S)
    try:
        for node in nodes:
            control.wait_applied(node, timeout=60)
        green = _gate(
            kind_cluster.name,
            baseline / "summary.json",
            tmp_path / "green",
            "--latency-min-samples",
            MIN_SAMPLES,
        )
    finally:
        control.delay_prepare(ALL_NODES, 0)
        for node in nodes:
            control.wait_applied(node, timeout=60)
    assert green.returncode == 0, green.stdout[-3000:] + green.stderr[-2000:]
    document = json.loads((tmp_path / "green" / "gate.json").read_text())
    assert document["passed"] is True and document["blocking"] == []
    [entry] = [r for r in document["requirements"] if r["id"] == REQUIREMENT]
    assert (entry["before"], entry["after"], entry["change"]) == ("passed", "passed", "unchanged")
    assert_prepare_latency_regression(
        document, fake_driver.driver, tmp_path / "green", PREPARE_DELAY_S
    )

    control.set_misbehaviour("cdi-wrong-device", True, ALL_NODES)
    try:
        for node in nodes:
            control.wait_applied(node, timeout=60)
        red = _gate(kind_cluster.name, baseline, tmp_path / "red")
    finally:
        control.set_misbehaviour("cdi-wrong-device", False, ALL_NODES)
        for node in nodes:
            control.wait_applied(node, timeout=60)
    assert red.returncode == 1, red.stdout[-3000:] + red.stderr[-2000:]
    report = (tmp_path / "red" / "gate.md").read_text()
    assert ": FAIL" in report.splitlines()[0], report
    assert f"| {REQUIREMENT} | MUST | passed | failed | regression |" in report, report
    assert json.loads((tmp_path / "red" / "gate.json").read_text())["blocking"] == [REQUIREMENT]
