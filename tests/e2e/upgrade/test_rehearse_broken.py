"""The rehearsal fails a driver that breaks an upgrade: the fake driver with misbehaviour
`register-once` answers GetInfo only once, so a restarted (upgraded) kubelet cannot register its
plugin again. New claims on upgraded nodes are never prepared: DRA-UPG-004 must fail and say
which node, while the pods on nodes not yet upgraded keep running (DRA-UPG-001 holds)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fakedriver.client.channel import ALL_NODES, FakeDriverControl
from runs import run_cli

from conformance.cluster import kind
from conformance.install import installer
from conformance.kube.client import load_clients
from conformance.kube.readiness import selected_nodes
from conformance.model.profile import SUITE_ROOT
from conformance.model.profile_parse import load_profile
from conformance.progress import Progress

# Past the CI budget: a cluster of its own and an in-place upgrade (bench/cluster.md).
pytestmark = pytest.mark.e2e_by_hand

FROM, TO = "v1.36.3", "v1.37.2"
CLUSTER = "dra-rehearse-broken"
PROFILE = SUITE_ROOT / "drivers/fake/profile.yaml"


def test_the_rehearsal_fails_a_plugin_that_cannot_register_again(tmp_path: Path) -> None:
    progress = Progress()
    cluster = kind.up(name=CLUSTER, workers=2, kubernetes=FROM, progress=progress)
    try:
        profile = load_profile(PROFILE)
        kubeconfig = str(cluster.kubeconfig)
        installer.install(profile, kubeconfig, None, installer.KindTarget(CLUSTER), progress)
        installer.wait_ready(profile, kubeconfig, None, progress=progress)
        k8s = load_clients(kubeconfig, None)
        control = FakeDriverControl(k8s.core)
        control.set_misbehaviour("register-once", True, ALL_NODES)
        for node in selected_nodes(k8s, profile):
            control.wait_applied(node, timeout=60)

        report = tmp_path / "rehearsal"
        result = run_cli(
            CLUSTER,
            report,
            "--k8s",
            FROM,
            "-n",
            "0",
            "--dra-skip-install",  # keep the misbehaviour switched on
            "--dra-upgrade-to",
            TO,
            str(SUITE_ROOT / "scenarios/upgrade"),
            run_id=f"rehearse-broken-{int(time.time())}",
            profile=str(PROFILE),
            timeout=3600,
        )
        output = result.stdout[-5000:] + result.stderr[-3000:]
        summary = json.loads((report / "summary.json").read_text())
        statuses = {r["id"]: r for r in summary["requirements"]}
        assert summary["verdict"] == "NON-CONFORMANT" and result.returncode == 1, output
        new_claim = statuses["DRA-UPG-004"]
        assert new_claim["status"] == "failed", new_claim
        assert "a new claim's pod on the upgraded node" in new_claim["reason"], new_claim
        assert statuses["DRA-UPG-001"]["status"] == "passed", statuses["DRA-UPG-001"]
    finally:
        cluster.delete()
