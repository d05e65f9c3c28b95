"""A failure on a Kubernetes version with a known platform issue, through the whole report:
summary.json, summary.md, JUnit and Allure (the fake suite of conftest.py, in a subprocess)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conformance.report.junit import parse_junit_counts

pytest_plugins = ["pytester"]

LINK = "https://github.com/kubernetes/kubernetes/issues/1"
NOTE = f"known platform issue {LINK}: the platform loses the registration"

KNOWN_ISSUES = f"""\
schema: 1
issues:
  - requirement: DRA-CORE-001
    affected: {{from: "1.37.0", fixed_in: "1.37.3"}}
    link: {LINK}
    summary: the platform loses the registration
  - requirement: DRA-CORE-002
    affected: {{from: "1.37.0"}}
    link: {LINK}
    summary: the platform loses the registration
  - requirement: DRA-ALLOC-007
    affected: {{from: "1.37.0"}}
    link: {LINK}
    summary: the platform crashes on this claim
    disrupts: its claim crashes kube-scheduler
  - requirement: DRA-ALLOC-005
    affected: {{from: "1.36.0", fixed_in: "1.37.0"}}
    link: {LINK}
    summary: not this version
"""

TESTS = """\
import pytest


@pytest.mark.dra_requirement("DRA-CORE-001")
def test_registers():
    assert False, "the plugin was never registered"


@pytest.mark.dra_requirement("DRA-CORE-002")
def test_publishes_slices():
    pass


@pytest.mark.dra_requirement("DRA-ALLOC-007")
def test_crashes_the_scheduler():
    pass  # would pass; on an affected version it is not run


@pytest.mark.dra_requirement("DRA-ALLOC-005")
def test_allocation_mode_all():
    assert 2 == 3, "expected every matching device"
"""


def test_a_known_platform_issue_is_visible_everywhere_and_never_a_pass(fake_suite) -> None:
    (fake_suite.catalog.parent / "known_issues.yaml").write_text(KNOWN_ISSUES)
    fake_suite.write_tests(TESTS)
    run = fake_suite.run("-k", "registers or slices or scheduler or allocation")

    summary = run.summary
    core1 = run.requirement("DRA-CORE-001")
    assert core1["status"] == "known-platform-issue"
    assert core1["reason"].startswith(f"{NOTE}; test_fake_suite.py::test_registers: ")
    assert core1["reason"].count("known platform issue") == 1
    assert run.requirement("DRA-CORE-002")["status"] == "passed"
    assert "did not show" in run.requirement("DRA-CORE-002")["reason"]
    assert run.requirement("DRA-ALLOC-005")["status"] == "failed"  # 1.37.2 is past its fix
    assert summary["verdict"] == "INCOMPLETE" and summary["exit_code"] == 3
    assert any(
        r.startswith("DRA-CORE-001 (MUST) failed with a known platform issue " + LINK)
        for r in summary["verdict_reasons"]
    )
    assert summary["counts"]["requirements"]["by_level"]["MUST"]["known_platform_issue"] == 1
    assert run.requirement("DRA-ALLOC-007")["status"] == "known-platform-issue"
    assert [(i["id"], i["showed"], i["not_run"]) for i in summary["known_platform_issues"]] == [
        ("DRA-CORE-001", True, None),
        ("DRA-CORE-002", False, None),
        ("DRA-ALLOC-007", True, "its claim crashes kube-scheduler"),
    ]

    markdown = (run.run_dir / "summary.md").read_text()
    assert "## Known platform issues" in markdown
    assert "| DRA-CORE-001 | MUST | core | KNOWN ISSUE |" in markdown
    assert "**DRA-CORE-002** (MUST) passed: it did not show" in markdown
    assert "**DRA-ALLOC-007** (MAY) was not run: its claim crashes kube-scheduler" in markdown

    junit = run.run_dir / "junit.xml"
    assert parse_junit_counts(junit).failures == 3  # JUnit still fails them, with the note
    failures = {
        case.get("name"): case.find("failure")
        for case in ET.parse(junit).getroot().iter("testcase")
    }
    assert failures["test_registers"].get("message").startswith(f"{NOTE} | AssertionError")
    assert not failures["test_allocation_mode_all"].get("message").startswith("known")

    results = {r["name"]: r for r in run.allure_results()}
    registers = results["test_registers"]
    assert registers["status"] == "failed"
    assert registers["statusDetails"]["message"].startswith(NOTE)
    assert {"name": "known platform issue", "url": LINK, "type": "link"} in registers["links"]
    labels = {(x["name"], x["value"]) for x in registers["labels"]}
    assert ("dra_outcome", "known-platform-issue") in labels
    assert ("dra_outcome", "failed") in {
        (x["name"], x["value"]) for x in results["test_allocation_mode_all"]["labels"]
    }


def test_a_bad_known_issues_file_is_reported_and_failures_stay_failures(fake_suite) -> None:
    (fake_suite.catalog.parent / "known_issues.yaml").write_text(
        "schema: 1\nissues:\n  - {requirement: DRA-CORE-001}\n"
    )
    fake_suite.write_tests(TESTS)
    run = fake_suite.run("-k", "registers")
    assert run.requirement("DRA-CORE-001")["status"] == "failed"
    assert "known platform issues not applied: known platform issues" in run.result.stdout.str()
