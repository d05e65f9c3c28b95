"""`dra-conformance sonobuoy-plugin` keeps Sonobuoy's done-file protocol whatever the run ends
with: outside a pod the in-cluster run has no verdict, and still the report is packed into the
results directory with the requirement-level JUnit file and `done` names the tarball."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

from conformance.cel import build
from conformance.errors import HostError
from conformance.suite_root import SUITE_ROOT


def test_a_run_that_cannot_start_still_hands_sonobuoy_its_report(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DRA_CONFORMANCE_ARGS": "-x"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "sonobuoy-plugin",
            "--results-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=SUITE_ROOT,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    tarball = Path((tmp_path / "done").read_text())
    assert tarball == tmp_path / "dra-conformance.tar.gz"
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        summary = json.loads(tar.extractfile("summary.json").read())  # type: ignore[union-attr]
    assert {"summary.json", "summary.md", "sonobuoy-junit.xml"} <= names
    assert summary["verdict"] == "NO-VERDICT"
    assert "no service account" in summary["no_verdict_detail"]
    assert "run exited 2" in result.stdout


def test_a_prebuilt_selector_helper_is_used_as_given(tmp_path: Path, monkeypatch) -> None:
    helper = tmp_path / "dra-cel"
    helper.write_text("")
    monkeypatch.setenv(build.PREBUILT_ENV, str(helper))
    assert build.helper_binary(progress=None) == helper  # type: ignore[arg-type]
    monkeypatch.setenv(build.PREBUILT_ENV, str(tmp_path / "missing"))
    try:
        build.helper_binary(progress=None)  # type: ignore[arg-type]
    except HostError as exc:
        assert "not a file" in exc.problem
    else:
        raise AssertionError("a missing prebuilt helper was accepted")
