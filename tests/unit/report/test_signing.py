"""Signed reports: real keys and real signatures over a small report directory."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from conformance.errors import ConformanceError
from conformance.report.signing import (
    ATTESTATION_FILE,
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    SIGN_KEY_ENV,
    STATEMENT_TYPE,
    check_signature,
    key_from_env_or_file,
    public_key_pem,
    sign_report,
    signing_key,
)

PREDICATE = {
    "run_id": "run-1",
    "verdict": "PASSED",
    "driver": {"name": "gpu.example.com", "version": "1.2.3"},
    "provenance": {"suite_version": "0.1.0"},
}
FILES = {
    "summary.json": '{"verdict": "PASSED"}\n',
    "summary.md": "# PASSED\n",
    "junit.xml": "<testsuites/>\n",
    "charts/x.svg": "<svg/>\n",
    "allure-report/index.html": "<html></html>\n",
}


def _pem(key: ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _new_key(kind: str) -> bytes:
    if kind == "ed25519":
        return _pem(ed25519.Ed25519PrivateKey.generate())
    return _pem(ec.generate_private_key(ec.SECP256R1()))


@pytest.fixture(params=["ed25519", "p256"])
def key(request: pytest.FixtureRequest) -> bytes:
    return _new_key(request.param)


@pytest.fixture
def report(tmp_path: Path) -> Path:
    root = tmp_path / "reports" / "run-1"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _envelope(report: Path) -> dict:
    return json.loads((report / ATTESTATION_FILE).read_text())


def _problems(report: Path, key: bytes) -> list[str]:
    return check_signature(report, public_key_pem(key)).problems


def test_signed_report_checks_out(report: Path, key: bytes) -> None:
    path = sign_report(report, key, PREDICATE)

    result = check_signature(report, public_key_pem(key))

    assert path == report / ATTESTATION_FILE
    assert result.problems == []
    assert result.ok
    assert result.statement is not None
    assert result.statement["_type"] == STATEMENT_TYPE
    assert result.statement["predicateType"] == PREDICATE_TYPE
    assert result.statement["predicate"] == PREDICATE
    assert result.statement["subject"] == [
        {"name": name, "digest": {"sha256": hashlib.sha256(FILES[name].encode()).hexdigest()}}
        for name in sorted(FILES)
    ]


def test_envelope_is_standard_dsse_json(report: Path, key: bytes) -> None:
    sign_report(report, key, PREDICATE)

    envelope = _envelope(report)

    assert envelope["payloadType"] == PAYLOAD_TYPE
    assert json.loads(base64.b64decode(envelope["payload"]))["_type"] == STATEMENT_TYPE
    [signature] = envelope["signatures"]
    assert isinstance(signature["keyid"], str) and signature["keyid"]
    assert base64.b64decode(signature["sig"], validate=True)


def test_signature_without_keyid_still_verifies(report: Path, key: bytes) -> None:
    """DSSE's keyid is only a hint; envelopes from other tools may leave it empty."""
    sign_report(report, key, PREDICATE)
    envelope = _envelope(report)
    envelope["signatures"][0]["keyid"] = ""
    (report / ATTESTATION_FILE).write_text(json.dumps(envelope))

    assert _problems(report, key) == []


def test_file_edited_after_signing(report: Path, key: bytes) -> None:
    sign_report(report, key, PREDICATE)
    (report / "summary.json").write_text('{"verdict": "FAILED"}\n')

    [problem] = _problems(report, key)

    assert problem.startswith("summary.json changed after signing (sha256 ")


def test_file_added_after_signing(report: Path, key: bytes) -> None:
    sign_report(report, key, PREDICATE)
    (report / "charts" / "extra.svg").write_text("<svg/>\n")

    assert _problems(report, key) == ["charts/extra.svg is not among the signed files"]


def test_file_removed_after_signing(report: Path, key: bytes) -> None:
    sign_report(report, key, PREDICATE)
    (report / "charts" / "x.svg").unlink()

    assert _problems(report, key) == ["charts/x.svg was signed but is missing"]


def test_payload_edited_under_the_kept_signature(report: Path, key: bytes) -> None:
    sign_report(report, key, PREDICATE)
    envelope = _envelope(report)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["driver"]["name"] = "other.example.com"
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (report / ATTESTATION_FILE).write_text(json.dumps(envelope))

    result = check_signature(report, public_key_pem(key))

    assert result.problems == [
        "the signed statement was changed after signing (its signature does not verify)"
    ]
    assert result.statement is None


@pytest.mark.parametrize("other", ["ed25519", "p256"])
def test_different_key(report: Path, key: bytes, other: str) -> None:
    sign_report(report, key, PREDICATE)

    [problem] = _problems(report, _new_key(other))

    assert problem.startswith("signed with a different key (key id ")


def test_missing_attestation(report: Path, key: bytes) -> None:
    assert _problems(report, key) == [f"no signature ({ATTESTATION_FILE} is missing)"]


def test_attestation_that_is_no_envelope(report: Path, key: bytes) -> None:
    (report / ATTESTATION_FILE).write_text('{"payload": "e30="}')

    [problem] = _problems(report, key)

    assert problem.startswith(f"{ATTESTATION_FILE} is not a DSSE envelope")


def test_signing_twice_does_not_sign_the_old_attestation(report: Path, key: bytes) -> None:
    sign_report(report, key, PREDICATE)
    sign_report(report, key, PREDICATE)

    result = check_signature(report, public_key_pem(key))

    assert result.problems == []
    assert result.statement is not None
    assert ATTESTATION_FILE not in {s["name"] for s in result.statement["subject"]}


@pytest.mark.parametrize(
    ("pem", "what"),
    [
        (b"not a key at all", "is not PEM"),
        (b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "not a readable"),
        (_pem(rsa.generate_private_key(public_exponent=65537, key_size=2048)), "an RSA key"),
        (_pem(ec.generate_private_key(ec.SECP384R1())), "curve secp384r1"),
    ],
    ids=["not-pem", "garbage-pem", "rsa", "p384"],
)
def test_unusable_private_key_is_refused(report: Path, pem: bytes, what: str) -> None:
    with pytest.raises(ConformanceError) as raised:
        sign_report(report, pem, PREDICATE)

    assert what in raised.value.problem
    assert "openssl genpkey" in raised.value.remedy
    assert not (report / ATTESTATION_FILE).exists()


def test_public_key_is_refused_as_signing_key(key: bytes) -> None:
    with pytest.raises(ConformanceError, match="is a public key"):
        key_from_env_or_file(public_key_pem(key).decode())


def test_encrypted_key_is_refused(tmp_path: Path) -> None:
    pem = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    (tmp_path / "key.pem").write_bytes(pem)

    with pytest.raises(ConformanceError, match="encrypted"):
        key_from_env_or_file(str(tmp_path / "key.pem"))


@pytest.mark.parametrize(
    ("pem", "what"),
    [
        (b"garbage", "is not a PEM public key"),
        (_pem(ed25519.Ed25519PrivateKey.generate()), "is a private key"),
        (
            rsa.generate_private_key(public_exponent=65537, key_size=2048)
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
            "is an RSA key",
        ),
    ],
    ids=["garbage", "private-key", "rsa-public-key"],
)
def test_unusable_public_key_is_refused(report: Path, key: bytes, pem: bytes, what: str) -> None:
    sign_report(report, key, PREDICATE)

    with pytest.raises(ConformanceError) as raised:
        check_signature(report, pem)

    assert what in raised.value.problem


def test_signing_key_from_file_env_or_nothing(
    tmp_path: Path, key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "key.pem").write_bytes(key)
    monkeypatch.delenv(SIGN_KEY_ENV, raising=False)
    assert signing_key(None) is None
    assert signing_key(str(tmp_path / "key.pem")) == key

    other = _new_key("ed25519")
    monkeypatch.setenv(SIGN_KEY_ENV, other.decode())
    assert signing_key(None) == other
    assert signing_key(str(tmp_path / "key.pem")) == key


def test_bad_key_in_env_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SIGN_KEY_ENV, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----")

    with pytest.raises(ConformanceError, match=f"\\${SIGN_KEY_ENV}"):
        signing_key(None)


def test_missing_key_file(tmp_path: Path) -> None:
    with pytest.raises(ConformanceError, match="cannot read the signing key"):
        key_from_env_or_file(str(tmp_path / "nope.pem"))
