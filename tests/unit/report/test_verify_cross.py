"""`verify` checks junit.xml's per-test outcomes against the Allure results and the evidence
archive: a forger who edits junit.xml and summary.json consistently but leaves the run's other
records alone is caught, and a faithful report still verifies. The reports are real ones, made
as test_verify.py makes them (the bundled suite, a driver that never becomes ready), and the fake
suite of conftest.py for every kind of outcome."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import app
from conformance.report import provenance, verify
from conformance.report.evidence import build_evidence
from conformance.report.verify import load_report, recompute, records_from_junit, verify_report
from conformance.report.verify_cross import (
    AllureOutcome,
    allure_outcomes,
    cross_check,
    disagreements,
    junit_outcomes,
)
from unit.report.test_verify import (  # noqa: E402
    _rewrite_consistently,
    never_ready_report,
    working_tree,
)

pytest_plugins = ["pytester"]

FAILED_TEST = "scenarios/core/test_core_slices.py::test_published_slices_are_consistent_pools"
FORGED = f"{FAILED_TEST}: junit.xml says passed, allure-results says failed"


@pytest.fixture(scope="module")
def bundled_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """NON-CONFORMANT: its one failed test is `FAILED_TEST`, the rest did not run or apply."""
    return never_ready_report(tmp_path_factory.mktemp("never-ready"))


@pytest.fixture
def report(bundled_report: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "report"
    shutil.copytree(bundled_report, copy)
    return copy


def _junit_says_it_passed(report: Path) -> None:
    """The forgery: the failed test's <failure> removed from junit.xml, and summary.json (its
    statuses, counts, outcomes and verdict), summary.md and the digest made to agree."""
    junit = report / "junit.xml"
    tree = ET.parse(junit)
    case = next(c for c in tree.getroot().iter("testcase") if c.find("failure") is not None)
    assert case.get("name") == FAILED_TEST.rsplit("::", 1)[1]
    case.remove(case.find("failure"))  # type: ignore[arg-type]
    tree.write(junit, encoding="utf-8", xml_declaration=True)

    def agree(summary: dict[str, Any]) -> None:
        derived = recompute(summary, records_from_junit(ET.parse(junit).getroot()))
        for key in ("requirements", "counts", "verdict", "exit_code", "verdict_text"):
            summary[key] = derived[key]
        summary["unmodified_verdict"] = derived.get("unmodified_verdict")
        for test in summary["tests"]:
            if test["nodeid"] == FAILED_TEST:
                test["outcome"] = "passed"

    _rewrite_consistently(report, agree)


def _say_allure_was_off(summary: dict[str, Any]) -> None:
    summary["artifacts"]["allure_results"] = None
    plugins = summary["provenance"]["pytest_plugins"]
    summary["provenance"]["pytest_plugins"] = [p for p in plugins if "allure" not in p]


def test_a_faithful_report_agrees_with_its_allure_results_and_evidence(report: Path) -> None:
    loaded = load_report(report)
    assert len(junit_outcomes(loaded.junit)) == len(loaded.summary["tests"]) > 50
    assert cross_check(report, loaded.summary, loaded.junit) == []
    result = verify_report(report, working_tree())
    assert result.exit_code == 3 and result.line.startswith("unsigned: the files agree"), (
        result.line
    )


def test_junit_and_summary_forged_together_are_caught_by_allure_results(
    report: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _junit_says_it_passed(report)
    with monkeypatch.context() as without_cross_check:  # what verify saw before: files agree
        without_cross_check.setattr(verify, "cross_check", lambda *args: [])
        assert verify_report(report, working_tree()).exit_code == 3
    result = verify_report(report, working_tree())
    assert not result.verified and result.exit_code == 1
    assert result.line.startswith(f"not verified: {FORGED}; "), result.line
    assert f"{FAILED_TEST}: junit.xml says passed, evidence.tar.gz's junit.xml says failed" in (
        result.line
    )


def test_the_cli_fails_a_forged_report_naming_the_test(
    report: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("conformance.report.verify.suite_digests", working_tree)
    monkeypatch.setattr(provenance, "suite_digests", working_tree)
    _junit_says_it_passed(report)
    assert app.main(["verify", str(report)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"not verified: {FORGED}") and out.count("\n") == 1, out


def test_missing_allure_results_fail_verify(report: Path) -> None:
    shutil.rmtree(report / "allure-results")
    result = verify_report(report, working_tree())
    assert not result.verified and result.exit_code == 1
    assert result.line.startswith(
        "not verified: allure-results/: missing, but the run recorded Allure results"
    ), result.line


def test_a_report_whose_run_had_no_allure_verifies_without_them(report: Path) -> None:
    shutil.rmtree(report / "allure-results")
    _rewrite_consistently(report, _say_allure_was_off)
    (report / "evidence.tar.gz").unlink()
    build_evidence(report)  # as the run writes it when Allure was off: no allure-results/
    result = verify_report(report, working_tree())
    assert result.exit_code == 3 and result.line.startswith("unsigned: the files agree"), (
        result.line
    )


def test_saying_allure_was_off_does_not_hide_the_archived_results(report: Path) -> None:
    _junit_says_it_passed(report)
    shutil.rmtree(report / "allure-results")
    _rewrite_consistently(report, _say_allure_was_off)
    result = verify_report(report, working_tree())
    assert result.exit_code == 1, result.line
    assert result.line.startswith(
        f"not verified: {FAILED_TEST}: junit.xml says passed, evidence.tar.gz's junit.xml says "
        "failed"
    ), result.line
    assert "allure-results/: missing" not in result.line
    archived = f"{FAILED_TEST}: junit.xml says passed, evidence.tar.gz's allure-results says failed"
    assert archived in result.line, result.line


def test_allure_results_forged_too_are_caught_by_the_evidence(report: Path) -> None:
    _junit_says_it_passed(report)
    for path in (report / "allure-results").glob("*-result.json"):
        result = json.loads(path.read_text())
        if result["status"] == "failed":
            result["status"] = "passed"
            for label in result["labels"]:
                if label["name"] == "dra_outcome":
                    label["value"] = "passed"
            path.write_text(json.dumps(result))
    result = verify_report(report, working_tree())
    assert result.exit_code == 1
    assert result.line.startswith(
        f"not verified: {FAILED_TEST}: junit.xml says passed, evidence.tar.gz's junit.xml says "
        "failed; "
    ), result.line
    assert "allure-results says failed" in result.line  # the archive's copy


def test_a_missing_or_unreadable_evidence_archive_fails_verify(report: Path) -> None:
    archive = report / "evidence.tar.gz"
    archive.unlink()
    result = verify_report(report, working_tree())
    assert result.line == "not verified: evidence.tar.gz: missing (every finished run writes it)"
    archive.write_bytes(b"not an archive")
    result = verify_report(report, working_tree())
    assert result.exit_code == 1
    assert result.line.startswith("not verified: evidence.tar.gz: not a readable gzip tar archive")


# --- the outcome mapping, on every kind of outcome the fake suite's tests end with ---

MORE_TESTS = """\
import pytest


@pytest.fixture
def failing_teardown():
    yield
    raise RuntimeError("cleanup failed")


class TestGrouped:
    @pytest.mark.parametrize("n", [1, 2])
    def test_parametrized(self, n):
        assert n == 1


def test_body_raises():
    raise RuntimeError("not an assertion: allure-pytest says broken")


def test_teardown_error(failing_teardown):
    pass


def test_skipped_then_teardown_error(failing_teardown):
    pytest.skip("skipped")


@pytest.mark.xfail(reason="expected")
def test_xfail():
    assert False


@pytest.mark.xfail(reason="may pass")
def test_xpass():
    pass
"""


def test_every_kind_of_outcome_agrees_with_its_allure_result(fake_suite) -> None:
    fake_suite.write_tests()
    fake_suite.write_tests(MORE_TESTS, name="test_more")
    run = fake_suite.run()
    report = load_report(run.run_dir)
    outcomes = junit_outcomes(report.junit)
    assert set(outcomes.values()) == {"passed", "failed", "error", "not-applicable", "not-run"}
    assert outcomes["test_more.TestGrouped::test_parametrized[2]"] == "failed"
    assert outcomes["test_more::test_skipped_then_teardown_error"] == "error"
    statuses = {r["status"] for r in run.allure_results()}
    assert statuses == {"passed", "failed", "broken", "skipped"}
    assert cross_check(run.run_dir, report.summary, report.junit) == []
    # and the labels were what agreed: a result stripped of them agrees by status class only
    unlabelled = [
        {**r, "labels": [x for x in r["labels"] if x["name"] != "dra_outcome"]}
        for r in run.allure_results()
    ]
    problems = disagreements(outcomes, allure_outcomes(unlabelled), "allure-results", {})
    assert problems == [
        "test_more::test_skipped_then_teardown_error: junit.xml says error, "
        "allure-results says skipped"
    ]


def test_a_flipped_testcase_in_the_fake_suite_is_named(fake_suite) -> None:
    fake_suite.write_tests()
    run = fake_suite.run()
    junit = run.run_dir / "junit.xml"
    text = junit.read_text()
    start = text.index("<failure ")
    end = text.index("</failure>", start) + len("</failure>")
    junit.write_text(text[:start] + text[end:])
    report = load_report(run.run_dir)
    problems = cross_check(run.run_dir, report.summary, report.junit)
    assert (
        "test_fake_suite.py::test_allocation_mode_all: junit.xml says passed, allure-results "
        "says failed"
    ) in problems, problems


def _result(status: str, stop: int, label: str | None = None, **extra: Any) -> dict[str, Any]:
    labels = [{"name": "dra_outcome", "value": label}] if label else []
    return {
        "fullName": "scenarios.core.test_a#test_b",
        "name": "test_b",
        "historyId": "h1",
        "status": status,
        "start": stop - 1,
        "stop": stop,
        "labels": labels,
        **extra,
    }


def test_a_retried_test_is_judged_by_its_last_attempt() -> None:
    first, retry = _result("failed", 10, "failed"), _result("passed", 20, "passed")
    for results in ([first, retry], [retry, first]):
        assert allure_outcomes(results) == {
            "scenarios.core.test_a::test_b": AllureOutcome("passed", "passed")
        }
    other = _result("skipped", 5, "not-run", historyId="h2", name="test_b[x]")
    assert set(allure_outcomes([first, other])) == {
        "scenarios.core.test_a::test_b",
        "scenarios.core.test_a::test_b[x]",
    }


@pytest.mark.parametrize(
    ("junit", "status", "label", "agrees"),
    [
        ("failed", "broken", None, True),  # an exception in the body: allure-pytest's broken
        ("error", "broken", None, True),
        ("not-applicable", "skipped", None, True),
        ("not-run", "skipped", None, True),
        ("passed", "failed", None, False),
        ("failed", "skipped", None, False),
        ("not-run", "skipped", "not-applicable", False),  # the label tells the skips apart
        ("known-platform-issue", "failed", "known-platform-issue", True),
        ("failed", "failed", "known-platform-issue", False),
    ],
)
def test_outcome_mapping(junit: str, status: str, label: str | None, agrees: bool) -> None:
    assert AllureOutcome(status, label).agrees_with(junit) is agrees


def test_a_known_issue_failure_in_junit_is_a_known_platform_issue() -> None:
    root = ET.fromstring(
        '<testsuite><testcase classname="scenarios.core.test_a" name="test_b"><properties>'
        '<property name="dra_known_issue" value="https://example.com/i/1" /></properties>'
        '<failure message="known">x</failure></testcase></testsuite>'
    )
    assert junit_outcomes(root) == {"scenarios.core.test_a::test_b": "known-platform-issue"}
    problems = disagreements(
        junit_outcomes(root),
        {"scenarios.core.test_a::test_b": AllureOutcome("broken", "failed")},
        "allure-results",
        {"scenarios.core.test_a::test_b": "scenarios/core/test_a.py::test_b"},
    )
    assert problems == [
        "scenarios/core/test_a.py::test_b: junit.xml says known-platform-issue, "
        "allure-results says failed"
    ]
