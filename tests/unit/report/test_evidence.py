"""The evidence bundle: what it holds, and that no secret leaves in it."""

from __future__ import annotations

import tarfile
import xml.etree.ElementTree as ET

import pytest

from conformance.observe.redact import REDACTED, find_secrets, redact_text
from conformance.report.evidence import build_evidence

pytest_plugins = ["pytester"]

JWT = (
    "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9."
    "eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0."
    "c2lnbmF0dXJlLW9mLXRoZS10b2tlbi1oZXJl"
)
KEY_DATA = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVB"
SECRETS = {
    "kubeconfig": f"""\
apiVersion: v1
kind: Config
users:
- name: kind-dra
  user:
    client-certificate-data: Q0VSVElGSUNBVEUtREFUQQ==
    client-key-data: {KEY_DATA}
    token: s3cr3t-kubeconfig-token-value
""",
    "log": f"GET /api/v1/pods Authorization: Bearer {JWT}\nserviceaccount token {JWT} mounted\n"
    "curl -H 'authorization: bearer opaque0token0value0123'\n",
    "json": '{"token": "abcdef0123456789-json-token", "password": "hunter2-password"}',
    "env": "DRA_API_TOKEN=env-token-value-123\nBOOTSTRAP=abcdef.0123456789abcdef\n",
    "pem": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBLAHBLAHBLAH\n-----END EC PRIVATE KEY-----\n",
    "flags": "kubectl --token flag-token-value-9 --password=pw-value-9 get pods\n",
    "argv-yaml": "args:\n  - --token\n  - yaml-argv-token-value\n  - --v=4\n",
    "argv-json": '{"args": ["--client-key", "json-argv-key-value", "--v=4"]}',
    "escaped": '{"message": "env: \\"password\\": \\"escaped-pw-value\\""}',
}
LEAKS = [
    KEY_DATA,
    "s3cr3t-kubeconfig-token-value",
    JWT,
    "abcdef0123456789-json-token",
    "hunter2-password",
    "env-token-value-123",
    "abcdef.0123456789abcdef",
    "MHcCAQEEIBLAHBLAHBLAH",
    "Q0VSVElGSUNBVEUtREFUQQ==",
    "flag-token-value-9",
    "opaque0token0value0123",
    "pw-value-9",
    "escaped-pw-value",
    "yaml-argv-token-value",
    "json-argv-key-value",
]


TOKEN_TEST = f"""
import pytest

@pytest.mark.dra_requirement("DRA-CORE-001")
def test_prints_a_token():
    token = "s3cr3t-python-token-value"  # in the traceback's source lines, so in junit.xml
    print("Authorization: Bearer {JWT}")
    assert False, "kubeconfig had token: s3cr3t-kubeconfig-token-value"
"""


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_redact_removes_credentials(name) -> None:
    text = SECRETS[name]
    cleaned = redact_text(text)
    assert REDACTED in cleaned
    for leak in LEAKS:
        assert leak not in cleaned
    assert find_secrets(text)
    assert find_secrets(cleaned) == []


def test_redact_keeps_ordinary_text() -> None:
    text = (
        "claim t1/gpu allocated device gpu-0 from pool worker-1 (driver gpu.example.com)\n"
        "pod Running; resourceID gpu.example.com/worker-1/gpu-0 Healthy\n"
        "reason DeletionByDeviceTaintManager, condition DisruptionTarget=True\n"
    )
    assert redact_text(text) == text


def test_run_dir_reports_carry_no_secret(fake_suite) -> None:
    fake_suite.write_tests(TOKEN_TEST)
    run = fake_suite.run()
    assert JWT in run.result.stdout.str()  # the test really printed it
    files = [p for p in run.run_dir.rglob("*") if p.is_file() and p.suffix != ".gz"]
    assert any(p.name == "junit.xml" for p in files)
    for path in files:
        text = path.read_text(errors="replace")
        for leak in (JWT, "s3cr3t-kubeconfig-token-value"):
            assert leak not in text, f"{leak[:12]}... in {path.relative_to(run.run_dir)}"
    reason = run.requirement("DRA-CORE-001")["reason"]
    assert "token: <redacted>" in reason


def test_redact_keeps_json_valid() -> None:
    import json

    cleaned = redact_text('{"token": "abc123456789", "name": "x"}')
    assert json.loads(cleaned) == {"token": REDACTED, "name": "x"}
    # feature gates named ...Token, and null secrets: literals, no secret, still JSON
    gates = '{"APIServerWebhookAuthenticationToken": true, "id_token": null, "secret": false}'
    assert json.loads(redact_text(gates)) == json.loads(gates)


def test_evidence_bundles_the_run_without_secrets(fake_suite) -> None:
    fake_suite.write_tests(TOKEN_TEST)
    run = fake_suite.run()
    diagnostics = run.run_dir / "diagnostics" / "test_prints_a_token"
    diagnostics.mkdir(parents=True)
    for name, text in SECRETS.items():
        (diagnostics / f"{name}.txt").write_text(text)
    (diagnostics / "screenshot.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff binary")
    (run.run_dir / "allure-report").mkdir()
    (run.run_dir / "allure-report" / "index.html").write_text("<html>report</html>")

    archive = build_evidence(run.run_dir)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        contents = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    top = run.run_dir.name
    for member in ("summary.json", "summary.md", "junit.xml", "allure-results/categories.json"):
        assert f"{top}/{member}" in names
    assert f"{top}/diagnostics/test_prints_a_token/kubeconfig.txt" in names
    assert not any("allure-report" in n for n in names)
    assert any(n.startswith(f"{top}/allure-results/") and n.endswith("-result.json") for n in names)
    png = contents[f"{top}/diagnostics/test_prints_a_token/screenshot.png"]
    assert png == b"\x89PNG\r\n\x1a\n\x00\xff binary"

    # the diagnostics written after the run still held secrets; nothing in the bundle does
    assert KEY_DATA in (diagnostics / "kubeconfig.txt").read_text()
    for name, data in contents.items():
        text = data.decode("utf-8", errors="replace")
        for leak in (*LEAKS, "s3cr3t-python-token-value"):
            assert leak not in text, f"{leak[:12]}... leaked in {name}"
    # junit.xml was redacted in the run directory and again on its way into the bundle: both
    # copies stay well-formed XML (a marker redacted twice came out as a raw tag)
    ET.fromstring(contents[f"{top}/junit.xml"])
    ET.parse(run.run_dir / "junit.xml")
