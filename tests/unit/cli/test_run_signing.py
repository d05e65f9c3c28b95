"""`run --sign-key`: a bad key is refused before anything runs; the finished report is signed
before the last line is printed, and the signature covers every file of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conformance.cli import app
from conformance.cli.run_verdict import finish
from conformance.report.no_verdict import write_no_verdict
from conformance.report.signing import ATTESTATION_FILE, check_signature, public_key_pem
from conformance.suite_root import SUITE_ROOT

PROFILE = str(SUITE_ROOT / "drivers/fake/profile.yaml")


def test_a_key_that_is_not_pem_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "key.pem").write_text("not a key\n")
    report = tmp_path / "report"
    argv = ["run", "--profile", PROFILE, "--report-dir", str(report)]
    assert app.main([*argv, "--sign-key", str(tmp_path / "key.pem")]) == 2
    assert "is not PEM" in capsys.readouterr().err
    assert not report.exists()


def test_the_report_is_signed_before_the_last_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    report = tmp_path / "report"
    report.mkdir()
    write_no_verdict(report, "run-1", "the run was interrupted")
    assert finish(report, "run-1", 2, 0.0, sign_key=key) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("dra-conformance: run run-1, report in ")
    assert (report / ATTESTATION_FILE).is_file()
    checked = check_signature(report, public_key_pem(key))
    assert checked.problems == [] and checked.statement is not None
    names = {s["name"] for s in checked.statement["subject"]}
    assert names == {"summary.json", "summary.md"}
    assert checked.statement["predicate"]["verdict"] == "NO-VERDICT"
