"""Each shipped third-party driver gives the outcomes `docs/drivers.md` records for it: `run
--profile <shipped profile> -n 2 --dra-probe-capabilities` (every suite) on a fresh kind cluster
the suite makes from the profile's `cluster` block, then every requirement's outcome compared
with that driver's column. A driver whose column changed is re-run and the matrix regenerated
(`dra-conformance matrix`, docs/drivers.md's header); a column the matrix lacks is a failure.

10 to 40 minutes a driver on 2 cores, past the CI budget (bench/drivers.md): run by hand,
`pytest -m e2e_by_hand tests/e2e/test_shipped_drivers.py`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runs import run_cli

from conformance.model.profile import SUITE_ROOT
from conformance.model.profile_parse import load_profile
from conformance.report.matrix import OUTCOME_LABELS
from conformance.report.requirement_status import RequirementStatus

pytestmark = pytest.mark.e2e_by_hand

MATRIX = SUITE_ROOT / "docs" / "drivers.md"
# Third-party drivers built from their public releases (docs/examples/<name>/README.md).
SHIPPED = ("dra-example-driver", "k8s-test-driver", "dranet")
FOOTNOTE = re.compile(r"\s*\[\^\d+\]")


def delete_cluster(name: str) -> None:
    """`dra-conformance cluster down`: deleting a cluster that does not exist is no error."""
    cmd = [sys.executable, "-m", "conformance.cli", "cluster", "down", "--name", name]
    subprocess.run(cmd, cwd=SUITE_ROOT, capture_output=True, text=True, timeout=600)


def recorded_column(markdown: str, driver: str) -> dict[str, str]:
    """requirement id -> outcome label of `driver`'s column of the matrix's requirements table."""
    lines = markdown.split("## Requirements", 1)[-1].strip().splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    wanted = [i for i, name in enumerate(header) if name.split(": ", 1)[-1] == driver]
    assert wanted, f"docs/drivers.md has no column for {driver}: run its profile, regenerate"
    rows = {}
    for line in lines[2:]:
        if not line.startswith("| DRA-"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = FOOTNOTE.sub("", cells[wanted[0]])
    return rows


@pytest.mark.parametrize("example", SHIPPED)
def test_a_shipped_driver_gives_its_recorded_outcomes(example: str, tmp_path: Path) -> None:
    profile_path = f"docs/examples/{example}/profile.yaml"
    driver = load_profile(SUITE_ROOT / profile_path).driver
    recorded = recorded_column(MATRIX.read_text(), driver)
    cluster = f"dra-shipped-{example}"[:40]
    delete_cluster(cluster)  # a fresh cluster from the profile's block
    report = tmp_path / "report"
    try:
        result = run_cli(
            cluster,
            report,
            "-n",
            "2",
            "--dra-probe-capabilities",
            profile=profile_path,
            run_id=f"shipped-{example}-{int(time.time())}",
            timeout=3600,
        )
    finally:
        delete_cluster(cluster)
    output = result.stdout[-4000:] + result.stderr[-3000:]
    summary_file = report / "summary.json"
    assert summary_file.exists(), f"exit {result.returncode}, no report:\n{output}"
    summary = json.loads(summary_file.read_text())
    seen = {
        r["id"]: OUTCOME_LABELS[RequirementStatus(r["status"])] for r in summary["requirements"]
    }
    differ = {
        rid: f"recorded {recorded.get(rid, 'nothing')}, now {seen.get(rid, 'nothing')}"
        for rid in sorted({*recorded, *seen})
        if recorded.get(rid) != seen.get(rid)
    }
    assert not differ, f"{driver} no longer gives docs/drivers.md's outcomes: {differ}\n{output}"
