"""Signed reports: a DSSE envelope over an in-toto statement naming every file of a report.

A published report directory can be copied, edited or trimmed; the signature lets a reader
check that each file is the one the run wrote, that none was added or removed, and who signed.
The envelope is standard DSSE JSON (`payloadType`, base64 `payload`, `signatures[].keyid/sig`),
so tools other than this suite can verify it with the same public key.

Keys: PEM private keys, ed25519 or ECDSA P-256 (what `openssl genpkey` writes), and their
SubjectPublicKeyInfo PEM public keys (`openssl pkey -pubout`).
"""

from __future__ import annotations

import binascii
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import UnverifiedSignatureError, VerificationError
from securesystemslib.signer import CryptoSigner, Signature, SSlibKey

from conformance.errors import ConformanceError

ATTESTATION_FILE = "attestation.dsse.json"
SIGN_KEY_ENV = "DRA_SIGN_KEY"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://dra-conformance.dev/report/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"

MAKE_KEY = "make one with: openssl genpkey -algorithm ed25519 -out key.pem"
MAKE_PUBLIC_KEY = "take it from the signing key: openssl pkey -in key.pem -pubout -out key.pub.pem"

_SigningKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey
_PublicKey = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey


@dataclass(frozen=True)
class SignatureCheck:
    """What `check_signature` found: no problems means every file is the one that was signed."""

    problems: list[str] = field(default_factory=list)
    statement: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


# --- keys ---------------------------------------------------------------------------------------


def signing_key(path: str | None) -> bytes | None:
    """The run's signing key: from `path`, else from $DRA_SIGN_KEY, else None (unsigned run)."""
    if path:
        return key_from_env_or_file(path)
    value = os.environ.get(SIGN_KEY_ENV, "")
    return key_from_env_or_file(value, origin=f"${SIGN_KEY_ENV}") if value.strip() else None


def key_from_env_or_file(value: str, *, origin: str | None = None) -> bytes:
    """A checked PEM private key: `value` is PEM text (as $DRA_SIGN_KEY holds) or a file name.

    Checked here so a bad key stops a run before it starts, not when the report is written.
    """
    if "-----BEGIN" in value:
        pem = value.encode()
        origin = origin or "the key text"
    else:
        origin = origin or value
        try:
            pem = Path(value).read_bytes()
        except OSError as exc:
            raise ConformanceError(
                f"cannot read the signing key {origin}: {exc.strerror or exc}",
                f"pass the path of a PEM private key; {MAKE_KEY}",
            ) from exc
    _load_private_key(pem, origin)
    return pem


def public_key_pem(private_key_pem: bytes) -> bytes:
    """The SubjectPublicKeyInfo PEM of a private key: what a reader needs to check a report."""
    key = _load_private_key(private_key_pem, "the signing key")
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _load_private_key(pem: bytes, origin: str) -> _SigningKey:
    if b"-----BEGIN" not in pem:
        raise ConformanceError(f"the signing key {origin} is not PEM", MAKE_KEY)
    if b"PUBLIC KEY-----" in pem or b"CERTIFICATE-----" in pem:
        raise ConformanceError(
            f"the signing key {origin} is a public key or a certificate, not a private key",
            f"sign with the private key (keep it secret); {MAKE_KEY}",
        )
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except TypeError as exc:  # cryptography's way of saying "encrypted, no password"
        raise ConformanceError(
            f"the signing key {origin} is encrypted with a passphrase",
            "write an unencrypted copy: openssl pkey -in key.pem -out plain-key.pem",
        ) from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ConformanceError(
            f"the signing key {origin} is not a readable PEM private key", MAKE_KEY
        ) from exc
    return _supported(key, f"the signing key {origin}")


def _supported(key: Any, what: str) -> Any:
    """`key` if ed25519 or ECDSA P-256: the two every DSSE verifier (cosign too) accepts."""
    if isinstance(key, ed25519.Ed25519PrivateKey | ed25519.Ed25519PublicKey):
        return key
    if isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey):
        if isinstance(key.curve, ec.SECP256R1):
            return key
        kind = f"an ECDSA key on curve {key.curve.name}"
    elif isinstance(key, rsa.RSAPrivateKey | rsa.RSAPublicKey):
        kind = "an RSA key"
    else:
        kind = f"a {type(key).__name__.removeprefix('_')} key"
    raise ConformanceError(
        f"{what} is {kind}; only ed25519 and ECDSA P-256 keys are supported",
        f"{MAKE_KEY} (or: openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256)",
    )


def _load_public_key(pem: bytes) -> SSlibKey:
    what = "the public key"
    if b"PRIVATE KEY-----" in pem:
        raise ConformanceError(f"{what} is a private key", MAKE_PUBLIC_KEY)
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ConformanceError(f"{what} is not a PEM public key", MAKE_PUBLIC_KEY) from exc
    return SSlibKey.from_crypto(_supported(key, what))


# --- signing ------------------------------------------------------------------------------------


def sign_report(report_dir: Path, key_pem: bytes, predicate: Mapping[str, Any]) -> Path:
    """Sign every file of `report_dir`; write and return report_dir/attestation.dsse.json.

    Call it last: a file written after it is reported as not signed.
    """
    signer = CryptoSigner(_load_private_key(key_pem, "the signing key"))
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [
            {"name": name, "digest": {"sha256": digest}}
            for name, digest in report_digests(report_dir).items()
        ],
        "predicateType": PREDICATE_TYPE,
        "predicate": dict(predicate),
    }
    payload = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    envelope = Envelope(payload, PAYLOAD_TYPE, {})
    envelope.sign(signer)
    path = report_dir / ATTESTATION_FILE
    path.write_text(json.dumps(envelope.to_dict(), indent=2) + "\n", encoding="utf-8")
    return path


def report_digests(report_dir: Path) -> dict[str, str]:
    """sha256 of each file under `report_dir` but the attestation, by posix relative name."""
    digests = {}
    for path in sorted(report_dir.rglob("*")):
        name = path.relative_to(report_dir).as_posix()
        if name != ATTESTATION_FILE and path.is_file():
            with path.open("rb") as f:
                digests[name] = hashlib.file_digest(f, "sha256").hexdigest()
    return dict(sorted(digests.items()))


# --- checking -----------------------------------------------------------------------------------


def check_signature(report_dir: Path, public_key_pem: bytes) -> SignatureCheck:
    """Whether `report_dir` is, file for file, what the holder of the key signed.

    The statement is returned only once its signature verified: an unverified one is no fact.
    Raises ConformanceError when `public_key_pem` is not a usable public key.
    """
    key = _load_public_key(public_key_pem)
    path = report_dir / ATTESTATION_FILE
    if not path.is_file():
        return SignatureCheck([f"no signature ({ATTESTATION_FILE} is missing)"])
    try:
        envelope = _read_envelope(path)
    except ValueError as exc:
        return SignatureCheck([f"{ATTESTATION_FILE} is not a DSSE envelope ({exc})"])
    if envelope.payload_type != PAYLOAD_TYPE:
        return SignatureCheck([f"the envelope's payloadType is {envelope.payload_type!r}"])
    problem = _signature_problem(envelope, key)
    if problem:
        return SignatureCheck([problem])
    try:
        statement = json.loads(envelope.payload)
    except ValueError:
        return SignatureCheck(["the signed payload is not JSON"])
    problems = _statement_problems(statement)
    if not problems:
        problems = _subject_problems(report_dir, statement["subject"])
    return SignatureCheck(problems, statement)


def _read_envelope(path: Path) -> Envelope:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Envelope.from_dict(data)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"missing or malformed {exc}") from exc
    except binascii.Error as exc:
        raise ValueError("bad base64") from exc
    except Exception as exc:  # securesystemslib's FormatError and friends
        raise ValueError(str(exc) or type(exc).__name__) from exc


def _signature_problem(envelope: Envelope, key: SSlibKey) -> str | None:
    """None when a signature verifies with `key`; keyids only help phrase the problem.

    DSSE makes keyid an optional hint (cosign leaves it empty), so each signature is tried
    with the key whatever keyid it names.
    """
    pae = envelope.pae()
    for sig in envelope.signatures.values():
        try:
            key.verify_signature(Signature(key.keyid, sig.signature), pae)
            return None
        except (UnverifiedSignatureError, VerificationError):
            continue
    keyids = {sig.keyid for sig in envelope.signatures.values()}
    if not keyids:
        return "the envelope has no signature"
    if key.keyid in keyids:
        return "the signed statement was changed after signing (its signature does not verify)"
    if "" in keyids:
        return "the signature does not verify with this public key"
    shown = ", ".join(sorted(k[:12] for k in keyids))
    return f"signed with a different key (key id {shown}…, this key is {key.keyid[:12]}…)"


def _statement_problems(statement: Any) -> list[str]:
    if not isinstance(statement, dict):
        return ["the signed payload is not an in-toto statement"]
    problems = []
    if statement.get("_type") != STATEMENT_TYPE:
        problems.append(f"the statement's _type is {statement.get('_type')!r}")
    if statement.get("predicateType") != PREDICATE_TYPE:
        problems.append(f"the statement's predicateType is {statement.get('predicateType')!r}")
    if not isinstance(statement.get("subject"), list):
        problems.append("the statement has no subject list")
    return problems


def _subject_problems(report_dir: Path, subjects: list[Any]) -> list[str]:
    actual = report_digests(report_dir)
    signed: set[str] = set()
    problems = []
    for subject in subjects:
        name, digest = _subject(subject)
        if name is None or digest is None:
            problems.append(f"a subject is malformed: {json.dumps(subject)[:80]}")
            continue
        signed.add(name)
        if name not in actual:
            problems.append(f"{name} was signed but is missing")
        elif actual[name] != digest:
            problems.append(f"{name} changed after signing (sha256 {actual[name][:12]}…)")
    problems += [f"{name} is not among the signed files" for name in actual if name not in signed]
    return problems


def _subject(subject: Any) -> tuple[str | None, str | None]:
    """A subject's name, when a plain path inside the report, and its sha256."""
    if not isinstance(subject, dict):
        return None, None
    name, digest = subject.get("name"), subject.get("digest")
    if not isinstance(name, str) or not _inside(name):
        name = None
    sha256 = digest.get("sha256") if isinstance(digest, dict) else None
    return name, sha256 if isinstance(sha256, str) else None


def _inside(name: str) -> bool:
    path = PurePosixPath(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts
