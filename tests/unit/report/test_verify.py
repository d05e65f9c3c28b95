"""`dra-conformance verify`: a faithful report of the bundled suite verifies, whatever its
verdict; an edited junit.xml, summary.json or summary.md, a swapped catalog and a report of
another suite do not. The report is a real one: the plugin runs the whole bundled scenario tree
in-process with the cluster stubbed and a driver that never becomes ready (no cluster needed,
nothing runs against one)."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conformance.cli import app
from conformance.report import provenance, suite_files
from conformance.report.markdown import render_markdown
from conformance.report.provenance import (
    SuiteDigests,
    file_digest,
    sha256_of,
    tree_digest,
    tree_files,
)
from conformance.report.seal import sealed_plugin_args
from conformance.report.signing import public_key_pem, sign_report
from conformance.report.verify import verify_report
from conformance.suite_root import SUITE_ROOT
from unit.plugin.test_not_ready_run import failure  # noqa: E402
from unit.plugin.test_plugin import stub_cluster  # noqa: E402

pytest_plugins = ["pytester"]

SCENARIOS = SUITE_ROOT / "scenarios"


def working_tree() -> SuiteDigests:
    """The reference as the files are now (a checkout's HEAD may lag a local edit)."""
    return SuiteDigests(
        version=provenance.suite_version(),
        catalog=file_digest(SCENARIOS / "requirements.yaml"),
        known_issues=file_digest(SCENARIOS / "known_issues.yaml"),
        scenarios=tree_digest(tree_files(SCENARIOS))[0],
        source="the working tree",
    )


def never_ready_report(
    workdir: Path,
    env: dict[str, str] | None = None,
    expected: int = pytest.ExitCode.TESTS_FAILED,
) -> Path:
    """Run the bundled scenario tree with a driver that never becomes ready; the report dir."""
    report = workdir / "run"
    with pytest.MonkeyPatch.context() as monkeypatch:
        from conformance.install import installer

        # the sealed plugins, as in a real run: the harness, xdist and allure-pytest
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        # the reference is the working tree (working_tree()): uncommitted edits are not foreign
        monkeypatch.setattr(suite_files, "committed_files", lambda root: None)
        for name in ("DRA_REQUIREMENTS_FILE", "DRA_KNOWN_ISSUES_FILE"):
            monkeypatch.delenv(name, raising=False)
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(workdir / "cache"))
        stub_cluster(monkeypatch, {})

        def wait_ready(*args: Any, timeout: float | None = None, **kwargs: Any) -> None:
            raise installer.DriverNotReady(failure(("slices",)), timeout or 45.0)

        monkeypatch.setattr(installer, "wait_ready", wait_ready)
        code = pytest.main(
            [
                *sealed_plugin_args(),
                "-p",
                "no:cacheprovider",
                "-q",
                "-c",
                str(SUITE_ROOT / "pyproject.toml"),
                "--rootdir",
                str(SUITE_ROOT),
                f"--basetemp={workdir / 'tmp'}",
                "--dra-profile",
                str(SUITE_ROOT / "drivers/fake/profile.yaml"),
                "--dra-cluster",
                "existing",
                "--dra-skip-install",
                "--dra-workload-image",
                "localhost/w:1",
                "--dra-run-id",
                "verify-1",
                "--dra-report-dir",
                str(report),
                "--dra-html-report",
                "never",
                str(SCENARIOS),
            ]
        )
    assert code == expected
    return report


@pytest.fixture(scope="module")
def bundled_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A NON-CONFORMANT report of the bundled suite: the driver never became ready."""
    return never_ready_report(tmp_path_factory.mktemp("never-ready"))


@pytest.fixture
def report(bundled_report: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "report"
    shutil.copytree(bundled_report, copy)
    return copy


def test_a_faithful_report_verifies_whatever_its_verdict(report: Path) -> None:
    summary = json.loads((report / "summary.json").read_text())
    assert summary["verdict"] == "NON-CONFORMANT"
    assert summary["modified"] is False, summary["modified_reasons"]
    prov = summary["provenance"]
    reference = working_tree()
    assert (prov["catalog"]["sha256"], prov["scenarios"]["sha256"]) == (
        reference.catalog,
        reference.scenarios,
    )
    assert prov["known_issues"] == {
        "path": "scenarios/known_issues.yaml",
        "sha256": reference.known_issues,
    }
    assert prov["profile"]["sha256"] == summary["driver"]["profile_digest"] is not None
    assert (prov["kubernetes_version"], prov["cluster_provider"]) == ("v1.37.2", "existing")
    assert prov["command_line"] and prov["suite_version"] == provenance.suite_version()
    junit = {
        p.get("name"): p.get("value")
        for p in ET.parse(report / "junit.xml").getroot().find("testsuite/properties") or ()
    }
    assert junit["dra_suite_version"] == prov["suite_version"]
    assert junit["dra_scenarios_sha256"] == reference.scenarios
    assert junit["dra_modified"] == "no"
    assert junit["dra_summary_sha256"] == sha256_of((report / "summary.json").read_bytes())
    assert "## Provenance" in (report / "summary.md").read_text()
    catalog = prov["catalog"]["sha256"]
    what = (
        f"NON-CONFORMANT, whole suite, unmodified (suite "
        f"{provenance.suite_version()}, catalog {catalog[:19]}…)"
    )
    unsigned = verify_report(report, reference)
    assert not unsigned.verified and unsigned.exit_code == 3
    assert unsigned.line == (
        f"unsigned: the files agree with each other ({what}); re-run the suite or ask for a "
        "signed report"
    )
    sign(report)
    result = verify_report(report, reference, public_key=PUBLIC)
    assert result.verified and result.exit_code == 0, result.line
    assert result.line.startswith(f"verified: {what}, signed ("), result.line


KEY = Ed25519PrivateKey.generate().private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
)
PUBLIC = public_key_pem(KEY)


def sign(report: Path) -> None:
    summary = json.loads((report / "summary.json").read_text())
    sign_report(report, KEY, {"driver": summary["driver"], "verdict": summary["verdict"]})


def _rewrite_consistently(report: Path, edit: Any) -> None:
    """Edit summary.json, then make junit.xml's digest and summary.md agree with it: what
    anyone can do to an unsigned report."""
    path = report / "summary.json"
    summary = json.loads(path.read_text())
    edit(summary)
    path.write_text(json.dumps(summary, indent=2) + "\n")
    (report / "summary.md").write_text(render_markdown(summary))
    junit = (report / "junit.xml").read_text()
    old = junit.split('name="dra_summary_sha256" value="', 1)[1].split('"', 1)[0]
    new = sha256_of(path.read_bytes())
    (report / "junit.xml").write_text(junit.replace(old, new))


def _rename_driver(summary: dict[str, Any]) -> None:
    summary["driver"]["name"] = "gpu.other-vendor.com"


def test_a_renamed_driver_verifies_unsigned_only_and_fails_signed(report: Path) -> None:
    sign(report)
    _rewrite_consistently(report, _rename_driver)
    unsigned = verify_report(report, working_tree())
    assert unsigned.line.startswith("unsigned: the files agree"), unsigned.line
    assert unsigned.exit_code == 3 and not unsigned.verified
    signed = verify_report(report, working_tree(), public_key=PUBLIC)
    assert not signed.verified and signed.exit_code == 1
    assert "summary.json" in signed.line and signed.line.startswith("not verified: "), signed.line


def test_a_report_signed_by_another_key_does_not_verify(report: Path) -> None:
    sign(report)
    other = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    result = verify_report(report, working_tree(), public_key=public_key_pem(other))
    assert not result.verified and result.line.startswith("not verified: "), result.line


def test_dropped_catalog_rows_do_not_verify_even_when_re_signed(report: Path) -> None:
    def drop_failed_rows(summary: dict[str, Any]) -> None:
        kept = [r for r in summary["requirements"] if r["status"] != "failed"]
        summary["requirements"] = kept

    _rewrite_consistently(report, drop_failed_rows)
    sign(report)  # even a key holder cannot make the suite's catalog forget a requirement
    result = verify_report(report, working_tree(), public_key=PUBLIC)
    assert not result.verified
    assert "summary.json says nothing of it" in result.line, result.line


def _flip_a_pass_to_a_failure(junit: Path) -> None:
    text = junit.read_text()
    # a not-run test of the suite: its <skipped> becomes a <failure>
    start = text.index("<skipped ")
    end = text.index(">", start) + 1
    closing = "</skipped>" if not text[start:end].endswith("/>") else ""
    replaced = '<failure message="edited">' if closing else '<failure message="edited" />'
    text = text[:start] + replaced + text[end:]
    if closing:
        text = text.replace(closing, "</failure>", 1)
    junit.write_text(text)


def test_a_hand_edited_junit_does_not_verify(report: Path) -> None:
    _flip_a_pass_to_a_failure(report / "junit.xml")
    result = verify_report(report, working_tree())
    assert not result.verified
    assert result.line.startswith("not verified: junit.xml says DRA-"), result.line
    assert " failed, summary.json says not-" in result.line


def test_a_removed_testcase_does_not_verify(report: Path) -> None:
    tree = ET.parse(report / "junit.xml")
    suite = next(tree.getroot().iter("testsuite"))
    case = suite.find("testcase[@name='test_slices_published_for_every_node']")
    if case is None:
        case = suite.findall("testcase")[0]
    suite.remove(case)
    tree.write(report / "junit.xml", encoding="utf-8", xml_declaration=True)
    result = verify_report(report, working_tree())
    assert not result.verified
    assert "junit.xml has" in result.line or "has no test" in result.line, result.line


def test_an_edited_summary_does_not_verify(report: Path) -> None:
    path = report / "summary.json"
    summary = json.loads(path.read_text())
    summary["verdict"], summary["exit_code"] = "CONFORMANT", 0
    path.write_text(json.dumps(summary, indent=2) + "\n")
    result = verify_report(report, working_tree())
    assert not result.verified
    assert result.line.startswith("not verified: summary.json was changed after the run"), (
        result.line
    )
    assert "junit.xml gives verdict NON-CONFORMANT, summary.json says CONFORMANT" in result.line


def test_an_edited_summary_md_does_not_verify(report: Path) -> None:
    path = report / "summary.md"
    path.write_text(path.read_text().replace("NON-CONFORMANT", "CONFORMANT", 1))
    result = verify_report(report, working_tree())
    assert result.line == (
        "not verified: summary.md is not what summary.json says (changed after the run)"
    )


def test_another_suite_does_not_verify(report: Path) -> None:
    other = SuiteDigests(
        version=provenance.suite_version(),
        catalog="sha256:" + "0" * 64,
        known_issues=working_tree().known_issues,
        scenarios=working_tree().scenarios,
        source="the installed suite",
    )
    result = verify_report(report, other)
    assert not result.verified
    assert result.line.startswith(
        "not verified: modified suite — not a certification: the requirements catalog it ran "
    ), result.line


def test_the_cli_prints_one_line_and_exits_by_it(
    report: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.setattr(provenance, "suite_digests", working_tree)
    monkeypatch.setattr("conformance.report.verify.suite_digests", working_tree)
    assert app.main(["verify", str(report)]) == 3
    out = capsys.readouterr().out
    assert out.startswith("unsigned: the files agree") and out.count("\n") == 1
    sign(report)
    (tmp_path / "pub.pem").write_bytes(PUBLIC)
    assert app.main(["verify", str(report), "--key", str(tmp_path / "pub.pem")]) == 0
    out = capsys.readouterr().out
    assert (
        out.startswith("verified: NON-CONFORMANT, whole suite, unmodified") and out.count("\n") == 1
    )
    _flip_a_pass_to_a_failure(report / "junit.xml")
    assert app.main(["verify", str(report)]) == 1
    assert capsys.readouterr().out.startswith("not verified: ")
    assert app.main(["verify", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dra-conformance: error: ") and err.count("\n") == 1, err
    (report / "junit.xml").unlink()
    assert app.main(["verify", str(report)]) == 2
    assert "junit.xml: missing" in capsys.readouterr().err
