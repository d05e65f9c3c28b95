"""A signed report checked by a tool that is not ours: sigstore's cosign, built here from its Go
module (by hand: the first build takes long, bench/suite.md), verifies each report file against
`attestation.dsse.json` with the vendor's public key, and refuses an edited one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from conformance import gobuild
from conformance.progress import Progress
from conformance.report.signing import PREDICATE_TYPE, public_key_pem, sign_report

pytestmark = pytest.mark.e2e_by_hand

COSIGN = gobuild.GoComponent(
    name="cosign",
    version="v2.6.5",
    module="github.com/sigstore/cosign/v2",
    packages=("github.com/sigstore/cosign/v2/cmd/cosign",),
    binaries=("cosign",),
)


@pytest.fixture(scope="module")
def cosign() -> Path:
    if not gobuild.is_built(COSIGN):
        gobuild.build(COSIGN, Progress())
    return gobuild.output_dir(COSIGN) / "cosign"


def _pem(key: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _verify(cosign: Path, public: Path, report: Path, name: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            str(cosign),
            "verify-blob-attestation",
            "--key",
            str(public),
            "--signature",
            str(report / "attestation.dsse.json"),
            "--type",
            PREDICATE_TYPE,
            "--insecure-ignore-tlog=true",  # offline: no transparency log to ask
            str(report / name),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "key",
    [ec.generate_private_key(ec.SECP256R1()), ed25519.Ed25519PrivateKey.generate()],
    ids=["p256", "ed25519"],
)
def test_cosign_verifies_each_signed_file_and_refuses_an_edited_one(cosign, key, tmp_path):
    report = tmp_path / "report"
    report.mkdir()
    (report / "summary.json").write_text('{"verdict": "CONFORMANT"}\n')
    (report / "junit.xml").write_text("<testsuites/>\n")
    sign_report(report, _pem(key), {"verdict": "CONFORMANT"})
    public = tmp_path / "pub.pem"
    public.write_bytes(public_key_pem(_pem(key)))
    for name in ("summary.json", "junit.xml"):
        result = _verify(cosign, public, report, name)
        assert result.returncode == 0 and "Verified OK" in result.stderr, result.stderr
    (report / "summary.json").write_text('{"verdict": "NON-CONFORMANT"}\n')
    result = _verify(cosign, public, report, "summary.json")
    assert result.returncode != 0 and "no matching subject digest" in result.stderr, result.stderr
