"""Verdict rules and per-requirement status, without running pytest."""

from __future__ import annotations

import pytest

from conformance.report.catalog import RequirementInfo
from conformance.report.outcomes import TestOutcome, TestRecord
from conformance.report.verdict import (
    CONFORMANT,
    NON_CONFORMANT,
    RequirementStatus,
    decide_verdict,
    requirement_results,
    requirement_status,
)

NA = "not applicable: the profile lacks it"


def record(nodeid: str, *req_ids: str, **phases: str) -> TestRecord:
    """A record from phase outcomes, e.g. call="failed"; a skip reason via reason_<when>."""
    rec = TestRecord(nodeid=nodeid, properties=[("requirement", r) for r in req_ids])
    for when in ("setup", "call", "teardown"):
        outcome = phases.get(when, "passed" if when != "call" or "setup" not in phases else None)
        if outcome:
            rec.phases[when] = outcome
            if outcome != "passed":
                rec.reasons[when] = phases.get(f"reason_{when}", f"{when} {outcome}")
    return rec


def info(req_id: str, level: str) -> RequirementInfo:
    return RequirementInfo(id=req_id, suite="core", level=level, statement=f"{req_id} works.")


@pytest.mark.parametrize(
    ("phases", "outcome"),
    [
        ({}, TestOutcome.PASSED),
        ({"call": "failed"}, TestOutcome.FAILED),
        ({"call": "failed", "teardown": "failed"}, TestOutcome.FAILED),
        ({"setup": "failed"}, TestOutcome.ERROR),
        ({"teardown": "failed"}, TestOutcome.ERROR),
        ({"setup": "skipped", "reason_setup": NA}, TestOutcome.NOT_APPLICABLE),
        ({"call": "skipped", "reason_call": NA}, TestOutcome.NOT_APPLICABLE),
        ({"setup": "skipped", "reason_setup": "needs 2 nodes"}, TestOutcome.SKIPPED),
        ({"setup": "skipped", "reason_setup": "Not Applicable: wrong case"}, TestOutcome.SKIPPED),
    ],
)
def test_test_outcome(phases, outcome) -> None:
    assert record("t", **phases).outcome is outcome


def test_a_test_without_a_call_phase_is_an_error() -> None:
    rec = TestRecord(nodeid="t", phases={"setup": "passed"})
    assert rec.outcome is TestOutcome.ERROR
    assert rec.reason.startswith("incomplete")


def test_not_applicable_reason_drops_the_prefix() -> None:
    rec = record("t", setup="skipped", reason_setup="not applicable: feature gate X is disabled")
    assert rec.reason == "feature gate X is disabled"


@pytest.mark.parametrize(
    ("phase_sets", "status"),
    [
        ([{}], RequirementStatus.PASSED),
        ([{}, {"call": "failed"}], RequirementStatus.FAILED),
        ([{}, {"setup": "failed"}], RequirementStatus.FAILED),
        ([{}, {"setup": "skipped", "reason_setup": "needs 2 nodes"}], RequirementStatus.SKIPPED),
        ([{"setup": "skipped", "reason_setup": NA}], RequirementStatus.NOT_APPLICABLE),
        ([{}, {"setup": "skipped", "reason_setup": NA}], RequirementStatus.PASSED),
    ],
)
def test_requirement_status_from_its_tests(phase_sets, status) -> None:
    records = [record(f"t{i}", "R", **p) for i, p in enumerate(phase_sets)]
    assert requirement_status(records)[0] is status


def verdict_of(level: str, **phases: str) -> str:
    catalog = {"R-1": info("R-1", level), "R-OK": info("R-OK", "MUST")}
    records = [record("ok", "R-OK"), record("t", "R-1", **phases)]
    return decide_verdict(requirement_results(catalog, records))[0]


@pytest.mark.parametrize(
    ("level", "phases", "verdict"),
    [
        ("MUST", {}, CONFORMANT),
        ("MUST", {"call": "failed"}, NON_CONFORMANT),
        ("MUST", {"setup": "failed"}, NON_CONFORMANT),
        ("MUST", {"setup": "skipped", "reason_setup": "cluster too small"}, NON_CONFORMANT),
        ("MUST", {"setup": "skipped", "reason_setup": NA}, CONFORMANT),
        ("SHOULD", {"call": "failed"}, CONFORMANT),
        ("SHOULD", {"setup": "failed"}, CONFORMANT),
        ("MAY", {"call": "failed"}, CONFORMANT),
    ],
)
def test_verdict(level, phases, verdict) -> None:
    assert verdict_of(level, **phases) == verdict


def test_a_must_requirement_without_result_fails_a_should_one_is_skipped() -> None:
    catalog = {"M": info("M", "MUST"), "S": info("S", "SHOULD")}
    results = {r.id: r for r in requirement_results(catalog, [])}
    assert results["M"].status is RequirementStatus.FAILED
    assert results["S"].status is RequirementStatus.SKIPPED
    verdict, reasons = decide_verdict(results.values())
    assert verdict == NON_CONFORMANT
    assert reasons == [f"M (MUST) no result: {results['M'].reason}"]


def test_no_catalog_collection_errors_or_interruption_are_never_conformant() -> None:
    catalog = {"M": info("M", "MUST")}
    results = requirement_results(catalog, [record("t", "M")])
    assert decide_verdict(results) == (CONFORMANT, [])
    assert decide_verdict(results, catalog_error="gone")[0] == NON_CONFORMANT
    assert decide_verdict(results, collection_errors=1)[0] == NON_CONFORMANT
    assert decide_verdict(results, interrupted=True)[0] == NON_CONFORMANT
    assert decide_verdict(requirement_results({}, []))[0] == NON_CONFORMANT


def test_an_id_outside_the_catalog_is_reported_but_does_not_decide() -> None:
    results = requirement_results({"M": info("M", "MUST")}, [record("a", "M"), record("b", "X")])
    assert [r.id for r in results] == ["M", "X"]
    assert "not in the requirements catalog" in results[1].reason
    assert decide_verdict(results)[0] == CONFORMANT


def test_verdict_scope_limits_what_decides() -> None:
    catalog = {
        "C": info("C", "MUST"),
        "A": RequirementInfo(id="A", suite="allocation", level="MUST", statement="A."),
        "A2": RequirementInfo(id="A2", suite="allocation", level="MUST", statement="A2."),
    }
    records = [record("c", "C"), record("a2", "A2", call="failed")]
    results = {r.id: r for r in requirement_results(catalog, records, scope=["core"])}
    assert results["A"].status is RequirementStatus.SKIPPED
    assert "outside the verdict scope (core)" in results["A"].reason
    assert results["A2"].status is RequirementStatus.FAILED  # still reported as it ran
    assert decide_verdict(results.values()) == (CONFORMANT, [])
    everything = requirement_results(catalog, records)
    assert decide_verdict(everything)[0] == NON_CONFORMANT
    assert decide_verdict(requirement_results(catalog, records, scope=["node_drain"]))[0] == (
        NON_CONFORMANT
    )
