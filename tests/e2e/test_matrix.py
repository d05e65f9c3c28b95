"""`dra-conformance matrix` over a real run's report: signed, it enters as signed; a copy with
one byte of junit.xml changed is refused and nothing is written; unsigned reports enter only
when allowed, marked unsigned.

One signed run of a single requirement on the session's cluster: the whole-suite report of
test_run.py lives in that module's scope, so it cannot be shared here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from runs import run_cli

from conformance.model.profile import SUITE_ROOT
from conformance.report.signing import public_key_pem

REQUIREMENT = "DRA-CORE-003"


@pytest.fixture(scope="module")
def signed_report(kind_cluster, fake_driver, tmp_path_factory) -> dict:
    keys = tmp_path_factory.mktemp("matrix-keys")
    key = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (keys / "key.pem").write_bytes(key)
    (keys / "pub.pem").write_bytes(public_key_pem(key))
    report = tmp_path_factory.mktemp("matrix-run") / "report"
    result = run_cli(
        kind_cluster.name,
        report,
        "--dra-requirement",
        REQUIREMENT,
        "--sign-key",
        str(keys / "key.pem"),
        run_id=f"e2e-matrix-{int(time.time())}",
    )
    assert (report / "summary.json").is_file(), result.stdout[-4000:] + result.stderr[-4000:]
    return {"report": report, "public_key": keys / "pub.pem"}


def _matrix(*args: object) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "conformance.cli", "matrix", *map(str, args)]
    return subprocess.run(cmd, cwd=SUITE_ROOT, capture_output=True, text=True, timeout=300)


def test_a_signed_report_enters_signed(signed_report, tmp_path: Path) -> None:
    report, key = signed_report["report"], signed_report["public_key"]
    summary = json.loads((report / "summary.json").read_text())
    markdown, html = tmp_path / "m.md", tmp_path / "m.html"
    done = _matrix(report, "--key", key, "--markdown", markdown, "--html", html)
    assert done.returncode == 0, done.stderr
    text = markdown.read_text()
    run_id = summary["run"]["id"]
    row = next(line for line in text.splitlines() if f"| {run_id} |" in line)
    assert row.startswith("| A | fake.dra-conformance.io | localhost/dra-conformance/fake-driver:")
    assert "| partial (1 of " in row and row.endswith(" MUST selected) | signed |"), row
    assert f"| {summary['cluster']['kubernetes_version']} |" in row
    assert f"| {REQUIREMENT} | MUST |" in text and "| passed |" in text
    assert f"**{summary['verdict_text']}**" in text
    assert "| health-reporting | declared, " in text
    assert "<script" not in html.read_text() and run_id in html.read_text()
    assert done.stderr.startswith("matrix: 1 report(s), 1 signed, ")


def test_one_changed_byte_of_junit_xml_is_refused_and_nothing_is_written(
    signed_report, tmp_path: Path
) -> None:
    report, key = signed_report["report"], signed_report["public_key"]
    edited = tmp_path / "edited"
    shutil.copytree(report, edited)
    junit = edited / "junit.xml"
    data = bytearray(junit.read_bytes())
    at = data.index(b'time="') + len(b'time="')  # a digit of a duration: nothing the verdict reads
    data[at] = ord("7") if data[at] != ord("7") else ord("8")
    junit.write_bytes(bytes(data))
    markdown = tmp_path / "m.md"
    done = _matrix(report, edited, "--key", key, "--markdown", markdown)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"dra-conformance: error: {edited}: refused, not verified: junit.xml changed after signing"
    ), lines
    assert not markdown.exists()


def test_an_unsigned_report_enters_only_when_allowed(signed_report, tmp_path: Path) -> None:
    report = signed_report["report"]
    refused = _matrix(report)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "refused, unsigned with no --key given" in refused.stderr
    allowed = _matrix(report, "--allow-unsigned")
    assert allowed.returncode == 0, allowed.stderr
    assert "| unsigned |" in allowed.stdout and "0 of them signed" in allowed.stdout
