"""The requirement-level JUnit file for Sonobuoy: every requirement one test case, each of our
statuses on the Sonobuoy status it maps to and named in the case's details."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conformance.report.sonobuoy import requirements_junit


def _requirement(rid: str, status: str, reason: str = "", remedy: str = "") -> dict:
    return {
        "id": rid,
        "suite": "core",
        "level": "MUST",
        "statement": f"{rid} holds",
        "status": status,
        "reason": reason,
        "remedy": remedy,
        "duration_s": 1.5,
    }


SUMMARY = {
    "verdict": "INCOMPLETE",
    "verdict_text": "INCOMPLETE",
    "run": {"id": "r1", "duration_s": 12.0},
    "requirements": [
        _requirement("DRA-A", "passed"),
        _requirement("DRA-B", "failed", "the claim stayed pending"),
        _requirement("DRA-C", "error", "the API server answered 500"),
        _requirement("DRA-D", "not-run", "disruptive", "pass --allow-disruptive"),
        _requirement("DRA-E", "not-applicable", "no health-reporting"),
        _requirement("DRA-F", "known-platform-issue", "upstream bug"),
    ],
}


def _cases() -> dict[str, ET.Element]:
    root = ET.fromstring(requirements_junit(SUMMARY))
    return {c.get("name", "").split()[0]: c for c in root.iter("testcase")}


def test_every_requirement_is_a_case_with_its_status_in_the_details() -> None:
    cases = _cases()
    assert list(cases) == ["DRA-A", "DRA-B", "DRA-C", "DRA-D", "DRA-E", "DRA-F"]
    expected = (("DRA-A", "passed"), ("DRA-D", "not-run"), ("DRA-F", "known-platform-issue"))
    for rid, status in expected:
        assert cases[rid].findtext("system-out") == f"status: {status}"
    assert cases["DRA-A"].get("name") == "DRA-A [MUST] DRA-A holds"


def test_statuses_map_onto_what_sonobuoy_knows() -> None:
    cases = _cases()
    assert [child.tag for child in cases["DRA-A"]] == ["system-out"]
    assert cases["DRA-B"].find("failure").get("message") == "failed: the claim stayed pending"
    assert cases["DRA-C"].find("error") is not None
    for rid in ("DRA-D", "DRA-E", "DRA-F"):
        assert cases[rid].find("skipped") is not None, rid
    assert cases["DRA-D"].find("skipped").get("message") == (
        "not-run: disruptive (to run it: pass --allow-disruptive)"
    )


def test_the_suite_carries_the_verdict_and_counts_failures() -> None:
    suite = ET.fromstring(requirements_junit(SUMMARY)).find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["dra_verdict"] == "INCOMPLETE" and properties["dra_run_id"] == "r1"
    assert (suite.get("tests"), suite.get("failures")) == ("6", "2")


def test_a_summary_without_requirements_is_an_empty_suite() -> None:
    suite = ET.fromstring(requirements_junit({"verdict": "NO-VERDICT"})).find("testsuite")
    assert suite.get("tests") == "0" and list(suite.iter("testcase")) == []
