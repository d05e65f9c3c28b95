"""Tests a run cut short: junit.xml and the Allure results tell summary.json's story of them.

The controller's records are what summary.json says. A test whose set-up reached the controller
but whose call and teardown never did (Ctrl-C, a crashed worker) is an error there: incomplete.
pytest's junitxml writes such a test as a bare `<testcase time=".."/>`: its reporter opens on
the set-up report, but only a call, a failure, a skip or a teardown names the test; read back,
that is a nameless pass. The workers' Allure listener may have recorded it as passed or skipped,
or not at all, and may have left results of tests whose reports never reached the controller.

A Ctrl-C can also land while one report goes round the plugins: the controller's records then
have it and junit.xml has not (seen: a passed test whose teardown junitxml never finalized, its
requirement missing). `ReportsWhole` holds SIGINT and SIGTERM until every plugin has seen the
report, then lets the signal act.

So the controller, once the workers are down, writes each incomplete test into junit.xml as an
error naming it, types its Allure results as that error, and sets aside the Allure results of
tests it holds no record of (kept for reading in diagnostics/, never part of the per-test story).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import threading
import xml.etree.ElementTree as ET
from collections.abc import Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from conformance.report.allure import LABEL_OUTCOME
from conformance.report.allure_run import RESULT_SUFFIX
from conformance.report.evidence import DIAGNOSTICS
from conformance.report.junit import JUNIT_XML, junit_source
from conformance.report.junit_records import junit_id
from conformance.report.outcomes import INCOMPLETE, TestOutcome, TestRecord
from conformance.report.verify_cross import allure_junit_id

UNRECORDED_ALLURE = "unrecorded-allure-results"  # under diagnostics/
_BROKEN = "broken"  # Allure's status of an error
_HELD = (signal.SIGINT, signal.SIGTERM)  # both end a run through KeyboardInterrupt


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM that arrive in the block act when it ends (a second one at once).
    Only Python-level handlers are held, in the main thread, where they run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in _HELD}
    held = [s for s, handler in previous.items() if callable(handler)]
    caught: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        if caught:  # asked twice: nobody waits for the report
            previous[signum](signum, frame)  # type: ignore[operator]
        caught.append(signum)

    for signum in held:
        signal.signal(signum, hold)
    try:
        yield
    finally:
        for signum in held:
            signal.signal(signum, previous[signum])
    if caught:
        previous[caught[0]](caught[0], None)  # type: ignore[operator]


class ReportsWhole:
    """A pytest plugin: a test or collection report reaches every plugin (the controller's
    records, junitxml, Allure, xdist) or, when the signal came before it, none."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        with signals_held():
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> Generator[None, None, None]:
        with signals_held():
            return (yield)


def is_incomplete(record: TestRecord) -> bool:
    """The test started on the controller's word and no phase after its set-up came back."""
    return record.outcome is TestOutcome.ERROR and record.reason == INCOMPLETE


def _named(case: ET.Element) -> bool:
    return bool(case.get("classname") or case.get("name"))


def junit_case(record: TestRecord) -> ET.Element:
    """An incomplete test as junit.xml records an error, with the properties pytest would have
    written from its last report (the test's own first, then the harness's)."""
    classname, _, name = junit_id(record.nodeid).partition("::")
    case = ET.Element(
        "testcase", {"classname": classname, "name": name, "time": f"{record.duration_s:.3f}"}
    )
    _add_properties(case, record)
    seen = ", ".join(f"{when} {how}" for when, how in record.phases.items()) or "none"
    error = ET.SubElement(case, "error", {"message": INCOMPLETE})
    error.text = f"phases the controller received: {seen}"
    return case


def _add_properties(case: ET.Element, record: TestRecord) -> None:
    properties = [*record.properties, *record.junit_properties()]
    if properties:
        block = ET.Element("properties")
        case.insert(0, block)
        for name, value in properties:
            ET.SubElement(block, "property", {"name": name, "value": str(value)})


def complete_junit(root: ET.Element, records: Iterable[TestRecord]) -> bool:
    """Drop the nameless testcases, add each incomplete test junit.xml does not name, as an
    error (counted in its <testsuite>), and give one it names without properties the record's.
    True when `root` changed."""
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    if not suites:
        return False
    changed = False
    named: dict[str, ET.Element] = {}
    for suite in suites:
        for case in suite.findall("testcase"):
            if _named(case):
                named[f"{case.get('classname', '')}::{case.get('name', '')}"] = case
            else:
                suite.remove(case)
                changed = True
    target = suites[0]
    for record in (r for r in records if is_incomplete(r)):
        case = named.get(junit_id(record.nodeid))
        if case is not None:  # a crashed worker's: junitxml writes properties at teardown only
            if case.find("properties") is None and record.junit_properties():
                _add_properties(case, record)
                changed = True
            continue
        target.append(junit_case(record))
        for element in {target, root}:  # a <testsuites> wrapper may carry the totals too
            for key in ("tests", "errors"):
                if element is target or element.get(key) is not None:
                    element.set(key, str(int(element.get(key, "0") or 0) + 1))
        changed = True
    return changed


def complete_junit_file(path: Path, records: Iterable[TestRecord]) -> None:
    tree = ET.parse(path)
    if complete_junit(tree.getroot(), records):
        tree.write(path, encoding="utf-8", xml_declaration=True)


def typed_as_incomplete(result: Mapping[str, Any]) -> dict[str, Any]:
    """An Allure result of an incomplete test, typed as the error the summary records; what the
    worker's listener said is kept as the trace."""
    labels = [x for x in result.get("labels") or [] if x.get("name") != LABEL_OUTCOME]
    details = result.get("statusDetails") or {}
    said = f"the worker's Allure listener recorded it {result.get('status')}"
    if details.get("message"):
        said += f": {details['message']}"
    return {
        **result,
        "status": _BROKEN,
        "statusDetails": {"message": INCOMPLETE, "trace": said},
        "labels": [*labels, {"name": LABEL_OUTCOME, "value": str(TestOutcome.ERROR)}],
    }


def new_allure_result(record: TestRecord) -> dict[str, Any]:
    """The Allure result of an incomplete test its worker never wrote one for."""
    owner, _, name = junit_id(record.nodeid).partition("::")
    digest = hashlib.sha256(record.nodeid.encode()).hexdigest()
    start = int((record.start or 0) * 1000)
    return {
        "uuid": digest[:32],
        "historyId": digest[:32],
        "testCaseId": digest[:32],
        "fullName": f"{owner}#{name.split('[', 1)[0]}",
        "name": name,
        "status": _BROKEN,
        "stage": "finished",
        "statusDetails": {"message": INCOMPLETE, "trace": "no Allure result was written"},
        "labels": [{"name": LABEL_OUTCOME, "value": str(TestOutcome.ERROR)}],
        "start": start,
        "stop": int((record.stop or 0) * 1000) or start,
    }


def complete_allure(results_dir: Path, records: Iterable[TestRecord], aside: Path) -> int:
    """Type the incomplete tests' results, write the missing ones, and move the results of
    tests the controller holds no record of to `aside`. The number of results set aside."""
    by_id = {junit_id(r.nodeid): r for r in records}
    typed: set[str] = set()
    set_aside = 0
    for path in sorted(results_dir.glob(f"*{RESULT_SUFFIX}")):
        try:
            result = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue  # verify names an unreadable result itself
        test_id = allure_junit_id(result)
        record = by_id.get(test_id)
        if record is None:
            aside.mkdir(parents=True, exist_ok=True)
            shutil.move(path, aside / path.name)
            set_aside += 1
        elif is_incomplete(record):
            path.write_text(json.dumps(typed_as_incomplete(result)), encoding="utf-8")
            typed.add(test_id)
    for test_id, record in by_id.items():
        if is_incomplete(record) and test_id not in typed:
            result = new_allure_result(record)
            (results_dir / f"{result['uuid']}{RESULT_SUFFIX}").write_text(
                json.dumps(result), encoding="utf-8"
            )
    return set_aside


def complete_report(
    config: pytest.Config,
    run_dir: Path,
    records: Iterable[TestRecord],
    allure_results: Path | None,
) -> None:
    """junit.xml (the run directory's and the user's --junitxml file) and the Allure results
    record the tests cut short as the controller's records do; before anything reads them."""
    records = list(records)
    for path in {Path(run_dir) / JUNIT_XML, junit_source(config)}:
        if path is not None and path.is_file():
            complete_junit_file(path, records)
    if allure_results is not None and allure_results.is_dir():
        complete_allure(allure_results, records, Path(run_dir) / DIAGNOSTICS / UNRECORDED_ALLURE)
