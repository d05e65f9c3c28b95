"""`dra-conformance run` as a subprocess, the way a user runs it (for the e2e tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conformance.model.profile import SUITE_ROOT


def run_cli(
    cluster: str,
    report_dir: Path,
    *extra: str,
    run_id: str,
    profile: str = "drivers/fake/profile.yaml",
    timeout: float = 1800,
) -> subprocess.CompletedProcess:
    """`dra-conformance run --profile P --name CLUSTER --report-dir D --run-id ID EXTRA...`."""
    cmd = [
        sys.executable,
        "-m",
        "conformance.cli",
        "run",
        "--profile",
        profile,
        "--name",
        cluster,
        "--report-dir",
        str(report_dir),
        "--run-id",
        run_id,
        *extra,
    ]
    return subprocess.run(cmd, cwd=SUITE_ROOT, capture_output=True, text=True, timeout=timeout)
