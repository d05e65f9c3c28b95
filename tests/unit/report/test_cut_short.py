"""A run cut short (Ctrl-C, a crashed worker): junit.xml and the Allure results record its tests
as summary.json does, so its own `verify` finds the files agreeing. junit.xml is the one pytest's
junitxml writes from the same reports the controller's records are built from."""

from __future__ import annotations

import json
import os
import signal
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pytest.junitxml import LogXML

from conformance.report.cut_short import (
    ReportsWhole,
    complete_allure,
    complete_junit,
    complete_junit_file,
    is_incomplete,
    signals_held,
)
from conformance.report.junit_records import records_from_junit
from conformance.report.outcomes import (
    INCOMPLETE,
    PROP_REQUIREMENT,
    TestOutcome,
    TestRecord,
    stamp_report,
)
from conformance.report.verify_cross import (
    allure_outcomes,
    disagreements,
    junit_outcomes,
    read_allure_dir,
)

pytest_plugins = ["pytester"]

CUT = "scenarios/claim_deletion/test_delete_claim_in_use.py::test_claim_deleted_in_use"
DONE = "scenarios/node_drain/test_drain_cordon.py::test_uncordoned_node"


def _report(nodeid: str, when: str, requirement: str) -> pytest.TestReport:
    path, _, name = nodeid.partition("::")
    report = pytest.TestReport(
        nodeid,
        (path, 1, name),
        {},
        "passed",
        None,
        when,  # type: ignore[arg-type]
        duration=0.25,
        start=100.0,
        stop=100.25,
        user_properties=[("dra_lease_wait_s", "0.1")],
    )
    stamp_report(report, **{PROP_REQUIREMENT: requirement})  # as the harness stamps its tests
    return report


def _run(tmp_path: Path) -> tuple[Path, dict[str, TestRecord]]:
    """pytest's junit.xml and the controller's records of a run interrupted during CUT's call:
    CUT's set-up came back, nothing after it; DONE passed."""
    reports = [
        *(_report(DONE, when, "DRA-DRAIN-002") for when in ("setup", "call", "teardown")),
        _report(CUT, "setup", "DRA-DEL-001"),
    ]
    path = tmp_path / "junit.xml"
    writer = LogXML(str(path), None)
    writer.pytest_sessionstart()
    records: dict[str, TestRecord] = {}
    for report in reports:
        record = records.setdefault(report.nodeid, TestRecord(report.nodeid))
        record.add_report(report)
        report.user_properties = [*report.user_properties, *record.junit_properties()]
        writer.pytest_runtest_logreport(report)
    writer.pytest_sessionfinish()
    return path, records


def _outcomes_read_back(path: Path) -> dict[str, tuple[str, str, list[str]]]:
    root = ET.parse(path).getroot()
    return {r.nodeid: (str(r.outcome), r.reason, r.requirements) for r in records_from_junit(root)}


def test_a_test_cut_short_after_its_setup_reads_back_from_junit_as_the_summary_records_it(
    tmp_path: Path,
) -> None:
    path, records = _run(tmp_path)
    assert records[CUT].outcome is TestOutcome.ERROR and records[CUT].reason == INCOMPLETE
    complete_junit_file(path, records.values())
    assert _outcomes_read_back(path) == {
        "scenarios.claim_deletion.test_delete_claim_in_use::test_claim_deleted_in_use": (
            "error",
            INCOMPLETE,
            ["DRA-DEL-001"],
        ),
        "scenarios.node_drain.test_drain_cordon::test_uncordoned_node": (
            "passed",
            "",
            ["DRA-DRAIN-002"],
        ),
    }
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("errors")) == ("2", "1")
    case = suite.find("testcase[@name='test_claim_deleted_in_use']")
    assert case is not None
    assert case.find("properties/property[@name='dra_lease_wait_s']") is not None


def test_completing_junit_twice_adds_the_test_once(tmp_path: Path) -> None:
    path, records = _run(tmp_path)
    complete_junit_file(path, records.values())
    root = ET.parse(path).getroot()
    assert complete_junit(root, records.values()) is False
    assert len(root.findall("testsuite/testcase")) == 2


def test_a_test_that_failed_or_passed_is_not_incomplete(tmp_path: Path) -> None:
    _, records = _run(tmp_path)
    assert [nodeid for nodeid, r in records.items() if is_incomplete(r)] == [CUT]
    failed = TestRecord("scenarios/x.py::test_y", phases={"setup": "failed"})
    assert not is_incomplete(failed)


def _allure(name: str, module: str, status: str, outcome: str | None = None) -> dict:
    labels = [{"name": "dra_outcome", "value": outcome}] if outcome else []
    return {
        "uuid": name,
        "historyId": name,
        "fullName": f"{module}#{name}",
        "name": name,
        "status": status,
        "labels": labels,
        "start": 1,
        "stop": 2,
    }


def test_allure_results_of_a_cut_short_run_tell_junits_story(tmp_path: Path) -> None:
    path, records = _run(tmp_path)
    complete_junit_file(path, records.values())
    results = tmp_path / "allure-results"
    results.mkdir()
    written = {
        # the worker's listener saw the body pass after the controller stopped listening
        "cut": _allure("test_claim_deleted_in_use", CUT_MODULE, "passed", "passed"),
        "done": _allure("test_uncordoned_node", DONE_MODULE, "passed", "passed"),
        # interrupted in its set-up on a worker: the controller never heard of it
        "never": _allure("test_pod_waits", "scenarios.claim_deletion.test_missing", "skipped"),
    }
    for stem, result in written.items():
        (results / f"{stem}-result.json").write_text(json.dumps(result))
    aside = tmp_path / "aside"
    assert complete_allure(results, records.values(), aside) == 1
    read, problems = read_allure_dir(results)
    junit = junit_outcomes(ET.parse(path).getroot())
    assert (problems, disagreements(junit, allure_outcomes(read), "allure-results", {})) == ([], [])
    assert [p.name for p in aside.iterdir()] == ["never-result.json"]
    cut = json.loads((results / "cut-result.json").read_text())
    assert (cut["status"], cut["statusDetails"]["message"]) == ("broken", INCOMPLETE)
    assert json.loads((results / "done-result.json").read_text()) == written["done"]


def test_an_incomplete_test_without_an_allure_result_gets_one(tmp_path: Path) -> None:
    path, records = _run(tmp_path)
    complete_junit_file(path, records.values())
    results = tmp_path / "allure-results"
    results.mkdir()
    done = _allure("test_uncordoned_node", DONE_MODULE, "passed", "passed")
    (results / "done-result.json").write_text(json.dumps(done))
    assert complete_allure(results, records.values(), tmp_path / "aside") == 0
    read, _ = read_allure_dir(results)
    junit = junit_outcomes(ET.parse(path).getroot())
    assert disagreements(junit, allure_outcomes(read), "allure-results", {}) == []
    assert len(read) == 2


CUT_MODULE = "scenarios.claim_deletion.test_delete_claim_in_use"
DONE_MODULE = "scenarios.node_drain.test_drain_cordon"


@pytest.fixture(autouse=True)
def ctrl_c_acts() -> Iterator[None]:
    """Python's Ctrl-C handler, as in a terminal: a shell without job control starts its
    background commands with SIGINT ignored, and `make test` may run as one."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_signal_in_the_block_acts_when_it_ends_and_a_second_at_once() -> None:
    with pytest.raises(KeyboardInterrupt), signals_held():
        os.kill(os.getpid(), signal.SIGINT)
        reached = True  # the block went on after the signal
    assert reached
    with pytest.raises(KeyboardInterrupt), signals_held():
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        pytest.fail("the second signal did not act at once")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


CONFTEST = """
import os, signal, pytest

@pytest.hookimpl(tryfirst=True)  # the first plugin to see the report; junitxml comes later
def pytest_runtest_logreport(report):
    if report.when == "teardown" and report.nodeid.endswith("test_a"):
        os.kill(os.getpid(), signal.SIGINT)
"""

TESTS = """
def test_a(record_property):
    record_property("requirement", "DRA-X-001")

def test_b():
    pass
"""


@pytest.mark.parametrize("whole", [True, False], ids=["held", "not-held"])
def test_ctrl_c_while_a_report_goes_round_reaches_junit_whole_or_not_at_all(
    pytester: pytest.Pytester, whole: bool
) -> None:
    """Without the hold, the interrupt lands between plugins: junitxml never finalizes test_a
    (its properties lost) although an earlier plugin recorded its teardown."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_cut=TESTS)
    plugins = [ReportsWhole()] if whole else []
    run = pytester.inline_run(
        "--junitxml=junit.xml", "-p", "no:cacheprovider", plugins=plugins, no_reraise_ctrlc=True
    )
    assert run.ret == pytest.ExitCode.INTERRUPTED
    root = ET.parse(pytester.path / "junit.xml").getroot()
    case = root.find("testsuite/testcase[@name='test_a']")
    assert case is not None
    found = case.find("properties/property[@name='requirement']") is not None
    assert found is whole
    assert root.find("testsuite/testcase[@name='test_b']") is None  # the run stopped there


def test_a_crashed_workers_test_keeps_its_requirement_in_junit(tmp_path: Path) -> None:
    """xdist reports a test whose worker died as a failure of phase "???" made on the controller;
    junitxml names it but writes properties at teardown only, which never comes."""
    path, _, name = CUT.partition("::")
    crash = pytest.TestReport(CUT, (path, None, path), {}, "failed", "worker 'gw0' crashed", "???")  # type: ignore[arg-type]
    setup = _report(CUT, "setup", "DRA-DEL-001")
    junit = tmp_path / "junit.xml"
    writer = LogXML(str(junit), None)
    writer.pytest_sessionstart()
    record = TestRecord(CUT)
    for report in (setup, crash):
        record.add_report(report)
        report.user_properties = [*report.user_properties, *record.junit_properties()]
        writer.pytest_runtest_logreport(report)
    writer.pytest_sessionfinish()
    complete_junit_file(junit, [record])
    (back,) = records_from_junit(ET.parse(junit).getroot())
    assert (back.outcome, back.requirements) == (record.outcome, ["DRA-DEL-001"])
    assert record.outcome is TestOutcome.ERROR
