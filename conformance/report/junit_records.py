"""junit.xml read back into the suite's test records: what `verify` recomputes the verdict from
and compares the Allure results and the evidence archive with. Only the properties the suite
stamps decide a record (its requirements, its typed outcome), never free text."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conformance.model.outcome import ERROR as HARNESS_ERROR
from conformance.model.outcome import PROP_OUTCOME, PROP_REMEDY, SkipKind
from conformance.report.outcomes import (
    INCOMPLETE,
    PROP_CLAIM,
    PROP_KNOWN_ISSUE,
    PROP_PROBE,
    PROP_REQUIREMENT,
    TestRecord,
)


def _suites(root: ET.Element) -> list[ET.Element]:
    return [root] if root.tag == "testsuite" else list(root.iter("testsuite"))


def junit_suite_properties(root: ET.Element) -> dict[str, str]:
    found: dict[str, str] = {}
    for suite in _suites(root):
        for prop in suite.findall("properties/property"):
            found.setdefault(str(prop.get("name")), str(prop.get("value", "")))
    return found


def records_from_junit(root: ET.Element) -> list[TestRecord]:
    """One record per test (a failed call and a teardown error are two testcases of one)."""
    records: dict[tuple[str, str], TestRecord] = {}
    for suite in _suites(root):
        for case in suite.findall("testcase"):
            key = (str(case.get("classname", "")), str(case.get("name", "")))
            record = records.get(key)
            if record is None:
                nodeid = "::".join(part for part in key if part)
                record = records[key] = TestRecord(nodeid=nodeid)
            _add_testcase(record, case)
    return list(records.values())


def _add_testcase(record: TestRecord, case: ET.Element) -> None:
    props = [(str(p.get("name")), str(p.get("value", ""))) for p in case.findall(".//property")]
    typed = dict(props)
    for name, value in props:
        if name == PROP_REQUIREMENT and value not in record.requirement_ids:
            record.requirement_ids.append(value)
        elif name == PROP_CLAIM and value not in record.claims:
            record.claims.append(value)
        elif name == PROP_KNOWN_ISSUE:
            record.known_issue = value
        elif name == PROP_PROBE:
            record.probe = tuple(value.split(","))
    failure, error, skipped = case.find("failure"), case.find("error"), case.find("skipped")
    if error is not None and error.get("message") == "collection failure":
        record.phases["collect"] = "failed"
        record.collect_error = True
    elif skipped is not None and skipped.get("message") == "collection skipped":
        record.phases["collect"] = "skipped"
    elif error is not None and error.get("message") == INCOMPLETE:
        record.phases.setdefault("setup", "passed")  # and nothing after it came back
    elif failure is not None:
        record.phases.setdefault("setup", "passed")
        record.phases["call"] = "failed"
        record.harness_error = typed.get(PROP_OUTCOME) == HARNESS_ERROR
    elif error is not None:
        when = "teardown" if "teardown" in str(error.get("message", "")) else "setup"
        record.phases[when] = "failed"
        if when == "teardown":
            record.phases.setdefault("setup", "passed")
            record.phases.setdefault("call", "passed")
    elif skipped is not None:
        record.phases["setup"] = "skipped"
        kind = typed.get(PROP_OUTCOME)
        if kind in tuple(SkipKind) and skipped.get("type") != "pytest.xfail":
            record.skip_kinds["setup"] = kind
            record.remedies["setup"] = typed.get(PROP_REMEDY, "")
    else:
        for when in ("setup", "call", "teardown"):
            record.phases.setdefault(when, "passed")


def junit_id(nodeid: str) -> str:
    """A pytest node id as junit.xml names it ("classname::name"): `a/b.py::C::t` is `a.b.C::t`."""
    path, *rest = nodeid.split("::")
    if not rest:
        return nodeid
    module = path.removesuffix(".py").replace("/", ".")
    return "::".join([".".join([module, *rest[:-1]]), rest[-1]])
