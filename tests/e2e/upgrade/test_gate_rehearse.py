"""`dra-conformance gate --from v1.36.3 --to v1.37.2 --rehearse` on real kind clusters, as a
platform team runs it before an upgrade: the core requirements of a claim's life (registration,
allocate and prepare, unprepare, device status) and the allocation suite's selectors on both
versions (the whole suite, twice, is past the CI budget: `test_run.py` runs it once), compared, and
the in-place upgrade rehearsal with live claims (DRA-UPG-001..005) on the v1.36.3 cluster once
its run is over. The --to run's driver prepares every claim 2 s slower (`--to-profile`, the
fake driver's delay-prepare fault from its start): the gate flags it as a latency regression,
draws the two versions side by side, and still passes. Two clusters of its own, one after the
other, each deleted; the node images of both versions are built once and cached (a cold v1.36.3
image adds 15-30 minutes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from gate_checks import assert_prepare_latency_regression

from conformance.model.profile import SUITE_ROOT
from conformance.model.profile_parse import load_profile

# Past the CI budget: a v1.36.3 cluster, two gated runs and a node-by-node upgrade
# (bench/cluster.md).
pytestmark = pytest.mark.e2e_by_hand

FROM, TO = "v1.36.3", "v1.37.2"
REHEARSED = {f"DRA-UPG-00{i}" for i in range(1, 6)}
SLOW_PREPARE_PROFILE = "drivers/fake/profile-slow-prepare.yaml"
PREPARE_DELAY_S = 2.0  # its install.values.controls
# At least the gate's 5 prepare calls a side for the latency comparison.
GATED = (
    "scenarios/core/test_core_registration.py",
    "scenarios/core/test_core_allocate_prepare.py",
    "scenarios/core/test_core_unprepare.py",
    "scenarios/core/test_core_device_status.py",
    "scenarios/allocation/test_alloc_selectors.py",
)


def test_gate_with_an_in_place_upgrade_rehearsal(tmp_path: Path) -> None:
    report = tmp_path / "gate"
    cmd = [
        sys.executable,
        "-m",
        "conformance.cli",
        "gate",
        "--profile",
        "drivers/fake/profile.yaml",
        "--from",
        FROM,
        "--to",
        TO,
        "--rehearse",
        "--to-profile",
        SLOW_PREPARE_PROFILE,
        "--report-dir",
        str(report),
        "-n",
        "2",
        *GATED,
    ]
    result = subprocess.run(cmd, cwd=SUITE_ROOT, capture_output=True, text=True, timeout=5400)
    output = result.stdout[-6000:] + result.stderr[-4000:]
    assert result.returncode == 0, output
    document = json.loads((report / "gate.json").read_text())
    assert document["passed"] is True and not document["blocking"], document
    compared = {r["id"] for r in document["requirements"]}
    assert {"DRA-CORE-001", "DRA-CORE-005", "DRA-ALLOC-001"} <= compared, sorted(compared)
    driver = load_profile(SUITE_ROOT / SLOW_PREPARE_PROFILE).driver
    assert_prepare_latency_regression(document, driver, report, PREPARE_DELAY_S, same_cluster=False)
    rehearsal = document["rehearsal"]
    assert rehearsal["verdict"] == "PASSED-PARTIAL", rehearsal  # the upgrade suite alone
    assert rehearsal["requirements"] == dict.fromkeys(sorted(REHEARSED), "passed"), rehearsal
    # every requirement was judged on checks made after the upgrade steps, not on nothing
    journey = json.loads((report / "rehearsal" / "upgrade" / "rehearsal.json").read_text())
    assert journey["stopped"] is None, journey
    for rid in REHEARSED:
        assert journey["evidence"][rid]["checks"], f"{rid}: no check made"
    print(f"\nupgrade {journey['upgrade']}, step wall times:")
    for name, seconds in journey["step_seconds"].items():
        print(f"  {seconds:7.1f} s  {name}")
