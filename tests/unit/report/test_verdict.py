"""Typed outcomes, per-requirement status and the verdict table, without running pytest."""

from __future__ import annotations

import pytest

from conformance.model.known_issues import KnownIssue
from conformance.model.kube_version import Version
from conformance.model.outcome import PROP_OUTCOME, PROP_REMEDY
from conformance.report.catalog import RequirementInfo
from conformance.report.outcomes import TestOutcome, TestRecord, foreign_claims
from conformance.report.partial import partial_selection
from conformance.report.verdict import (
    CONFORMANT,
    INCOMPLETE,
    NO_VERDICT,
    NON_CONFORMANT,
    PASSED_PARTIAL,
    Partial,
    RequirementStatus,
    decide_verdict,
    requirement_results,
    requirement_status,
    verdict_text,
)

NA = {"kind": "not-applicable", "reason": "not applicable: the profile lacks it"}
NOT_RUN = {
    "kind": "not-run",
    "reason": "not run: disruptive (to run it: pass --allow-disruptive)",
    "remedy": "pass --allow-disruptive",
}
PLAIN_SKIP = {"reason": "needs 2 nodes"}


def record(nodeid: str, *req_ids: str, skip: dict | None = None, **phases: str) -> TestRecord:
    """A record from phase outcomes (e.g. call="failed"); `skip` types a skipped setup."""
    rec = TestRecord(nodeid=nodeid, requirement_ids=list(req_ids))
    if skip is not None:
        phases = {"setup": "skipped", **phases}
    for when in ("setup", "call", "teardown"):
        outcome = phases.get(when, "passed" if when != "call" or "setup" not in phases else None)
        if outcome:
            rec.phases[when] = outcome
            if outcome != "passed":
                rec.reasons[when] = phases.get(f"reason_{when}", f"{when} {outcome}")
    if skip is not None:
        rec.reasons["setup"] = skip["reason"]
        if "kind" in skip:
            rec.skip_kinds["setup"] = skip["kind"]
            rec.remedies["setup"] = skip.get("remedy", "")
    return rec


def info(req_id: str, level: str, suite: str = "core") -> RequirementInfo:
    return RequirementInfo(id=req_id, suite=suite, level=level, statement=f"{req_id} works.")


@pytest.mark.parametrize(
    ("phases", "skip", "outcome"),
    [
        ({}, None, TestOutcome.PASSED),
        ({"call": "failed"}, None, TestOutcome.FAILED),
        ({"call": "failed", "teardown": "failed"}, None, TestOutcome.FAILED),
        ({"setup": "failed"}, None, TestOutcome.ERROR),
        ({"teardown": "failed"}, None, TestOutcome.ERROR),
        ({}, NA, TestOutcome.NOT_APPLICABLE),
        ({}, NOT_RUN, TestOutcome.NOT_RUN),
        ({}, PLAIN_SKIP, TestOutcome.NOT_RUN),
        # the reason text never decides: a bare skip that says "not applicable" is not run
        ({}, {"reason": "not applicable: says so itself"}, TestOutcome.NOT_RUN),
    ],
)
def test_test_outcome(phases, skip, outcome) -> None:
    assert record("t", skip=skip, **phases).outcome is outcome


def test_a_test_without_a_call_phase_is_an_error() -> None:
    rec = TestRecord(nodeid="t", phases={"setup": "passed"})
    assert rec.outcome is TestOutcome.ERROR
    assert rec.reason.startswith("incomplete")


def test_typed_reasons_drop_the_message_prefix_and_keep_the_remedy_apart() -> None:
    assert record("t", skip=NA).reason == "the profile lacks it"
    not_run = record("t", skip=NOT_RUN)
    assert not_run.reason == "disruptive"
    assert not_run.remedy == "pass --allow-disruptive"
    assert record("t", skip=NA).remedy == ""


def test_the_typed_outcome_comes_from_the_harness_stamp() -> None:
    class Report:
        nodeid, when, outcome, duration = "t", "setup", "skipped", 0.1
        longrepr = ("f.py", 1, "Skipped: not run: lease timeout (to run it: raise it)")
        user_properties = [("metric", "{}")]
        dra_stamp = {"requirement": "R", PROP_OUTCOME: "not-run", PROP_REMEDY: "raise it"}

    rec = TestRecord(nodeid="t")
    rec.add_report(Report())  # type: ignore[arg-type]
    assert rec.outcome is TestOutcome.NOT_RUN
    assert (rec.reason, rec.remedy) == ("lease timeout", "raise it")
    assert rec.requirements == ["R"]
    assert rec.properties == [("metric", "{}")] and rec.claims == []
    assert rec.junit_properties() == [
        ("requirement", "R"),
        (PROP_OUTCOME, "not-run"),
        (PROP_REMEDY, "raise it"),
    ]


def test_user_properties_never_decide_a_requirement_or_an_outcome() -> None:
    """What a test's own code records (record_property) is a claim, never the harness's word:
    no requirement, and a skip it calls not applicable stays not run."""

    class Report:
        nodeid, when, outcome, duration = "t", "setup", "skipped", 0.1
        longrepr = ("f.py", 1, "Skipped: not applicable: says so itself")
        user_properties = [("requirement", "DRA-CORE-001"), (PROP_OUTCOME, "not-applicable")]

    rec = TestRecord(nodeid="t")
    rec.add_report(Report())  # type: ignore[arg-type]
    assert rec.requirements == []
    assert rec.outcome is TestOutcome.NOT_RUN
    assert rec.claims == ["requirement=DRA-CORE-001", "dra_outcome=not-applicable"]
    catalog = {"DRA-CORE-001": info("DRA-CORE-001", "MUST")}
    results = requirement_results(catalog, [rec])
    assert results[0].status is RequirementStatus.NOT_RUN
    assert foreign_claims([rec]) == [
        "t: only the suite's own tests under scenarios/ can decide a requirement (it recorded "
        "requirement=DRA-CORE-001, dra_outcome=not-applicable)"
    ]
    decided = decide_verdict(
        [r for r in results if r.status is not RequirementStatus.NOT_RUN]
        + [requirement_results(catalog, [record("s", "DRA-CORE-001")])[0]],
        problems=foreign_claims([rec]),
    )
    assert decided.verdict == INCOMPLETE and decided.reasons[-1].startswith("t: only the suite")


@pytest.mark.parametrize(
    ("records", "status"),
    [
        ([{}], RequirementStatus.PASSED),
        ([{}, {"call": "failed"}], RequirementStatus.FAILED),
        ([{}, {"setup": "failed"}], RequirementStatus.ERROR),
        ([{"call": "failed"}, {"setup": "failed"}], RequirementStatus.FAILED),
        ([{}, {"skip": NOT_RUN}], RequirementStatus.NOT_RUN),
        ([{"setup": "failed"}, {"skip": NOT_RUN}], RequirementStatus.ERROR),
        ([{"skip": NA}], RequirementStatus.NOT_APPLICABLE),
        ([{}, {"skip": NA}], RequirementStatus.PASSED),
    ],
)
def test_requirement_status_from_its_tests(records, status) -> None:
    built = [record(f"t{i}", "R", **r) for i, r in enumerate(records)]
    assert requirement_status(built)[0] is status


def test_a_not_run_requirement_carries_the_remedy() -> None:
    status, reason, remedy = requirement_status([record("t", "R", skip=NOT_RUN)])
    assert (status, reason, remedy) == (
        RequirementStatus.NOT_RUN,
        "t: disruptive",
        "pass --allow-disruptive",
    )


OUTCOMES = {
    "passed": {},
    "failed": {"call": "failed"},
    "error": {"setup": "failed"},
    "not-applicable": {"skip": NA},
    "not-run": {"skip": NOT_RUN},
}
# The verdict table: a run with one passed MUST and one requirement of `level` with `outcome`.
EXPECTED = {
    ("MUST", "passed"): CONFORMANT,
    ("MUST", "failed"): NON_CONFORMANT,
    ("MUST", "error"): NON_CONFORMANT,
    ("MUST", "not-applicable"): CONFORMANT,
    ("MUST", "not-run"): INCOMPLETE,
    **{(level, o): CONFORMANT for level in ("SHOULD", "MAY") for o in OUTCOMES},
}


@pytest.mark.parametrize(("level", "outcome"), sorted(EXPECTED))
def test_verdict_table(level, outcome) -> None:
    catalog = {"R-1": info("R-1", level), "R-OK": info("R-OK", "MUST")}
    records = [record("ok", "R-OK"), record("t", "R-1", **OUTCOMES[outcome])]
    verdict = decide_verdict(requirement_results(catalog, records))
    assert verdict.verdict == EXPECTED[(level, outcome)]
    assert verdict.exit_code == {CONFORMANT: 0, NON_CONFORMANT: 1, INCOMPLETE: 3}[verdict.verdict]
    assert verdict.basis == "MUST"
    assert bool(verdict.reasons) == (verdict.verdict != CONFORMANT)


def test_a_driver_that_declines_what_the_api_lets_it_decline_is_conformant() -> None:
    """Sharing a claim and publishing capacity are a driver's choice: their MUSTs end not
    applicable, which is met; the lost-CDI-specs SHOULD it fails is reported, not decisive."""
    catalog = {
        "DRA-CORE-003": info("DRA-CORE-003", "MUST"),
        "DRA-ALLOC-002": info("DRA-ALLOC-002", "MUST"),
        "DRA-ALLOC-010": info("DRA-ALLOC-010", "MUST"),
        "DRA-LIFE-003": info("DRA-LIFE-003", "SHOULD"),
    }
    declined = {"kind": "not-applicable", "reason": "the profile declares no capacity"}
    records = [
        record("core", "DRA-CORE-003"),
        record("capacity", "DRA-ALLOC-002", skip=declined),
        record("shared", "DRA-ALLOC-010", skip=NA),
        record("cdi", "DRA-LIFE-003", call="failed"),
    ]
    results = requirement_results(catalog, records)
    statuses = {r.id: r.status for r in results}
    assert statuses["DRA-ALLOC-002"] is RequirementStatus.NOT_APPLICABLE
    assert statuses["DRA-LIFE-003"] is RequirementStatus.FAILED
    verdict = decide_verdict(results)
    assert (verdict.verdict, verdict.reasons) == (CONFORMANT, [])


def test_a_declared_capability_is_a_promise_its_requirements_decide() -> None:
    """A driver that declares admin access and refuses an admin-access claim breaks its
    promise: the MAY decides as a MUST. Undeclared, the same failure is only reported."""
    catalog = {
        "DRA-CORE-003": info("DRA-CORE-003", "MUST"),
        "DRA-ALLOC-013": RequirementInfo(
            "DRA-ALLOC-013", "allocation", "MAY", "admin access", capabilities=("admin-access",)
        ),
    }
    records = [record("core", "DRA-CORE-003"), record("admin", "DRA-ALLOC-013", call="failed")]
    promised = requirement_results(catalog, records, declared=("admin-access", "opaque-config"))
    assert promised[1].promised_by == ("admin-access",)
    assert promised[1].to_dict()["promised_by"] == ["admin-access"]
    verdict = decide_verdict(promised)
    assert verdict.verdict == NON_CONFORMANT
    assert verdict.reasons == [
        "DRA-ALLOC-013 (MAY, promised by the declared admin-access) failed: admin: call failed"
    ]
    undeclared = requirement_results(catalog, records, declared=("opaque-config",))
    assert undeclared[1].promised_by == ()
    assert decide_verdict(undeclared).verdict == CONFORMANT
    # a MUST is judged as a MUST whatever is declared
    catalog["DRA-CORE-003"] = RequirementInfo(
        "DRA-CORE-003", "core", "MUST", "x", capabilities=("admin-access",)
    )
    assert requirement_results(catalog, records, declared=("admin-access",))[0].promised_by == ()


def test_a_failure_outweighs_a_must_that_did_not_run_and_both_are_listed() -> None:
    catalog = {"A": info("A", "MUST"), "B": info("B", "MUST")}
    records = [record("a", "A", call="failed"), record("b", "B", skip=NOT_RUN)]
    verdict = decide_verdict(requirement_results(catalog, records))
    assert verdict.verdict == NON_CONFORMANT
    assert verdict.reasons == [
        "A (MUST) failed: a: call failed",
        "B (MUST) not run: b: disruptive — to run it: pass --allow-disruptive",
    ]


def test_a_requirement_without_result_is_not_run_and_never_met() -> None:
    catalog = {"M": info("M", "MUST"), "S": info("S", "SHOULD")}
    results = {r.id: r for r in requirement_results(catalog, [])}
    assert results["M"].status is RequirementStatus.NOT_RUN
    assert results["S"].status is RequirementStatus.NOT_RUN
    verdict = decide_verdict(results.values())
    assert verdict.verdict == INCOMPLETE
    assert verdict.reasons[0].startswith("M (MUST) not run: no test of it ran in this run")
    assert "to run it: select its suite" in verdict.reasons[0]


def test_no_catalog_collection_errors_or_interruption_are_never_conformant() -> None:
    catalog = {"M": info("M", "MUST")}
    results = requirement_results(catalog, [record("t", "M")])
    assert decide_verdict(results).verdict == CONFORMANT
    assert decide_verdict(results).reasons == []
    assert decide_verdict(results, catalog_error="gone").verdict == INCOMPLETE
    assert decide_verdict(results, collection_errors=1).verdict == INCOMPLETE
    assert decide_verdict(requirement_results({}, [])).verdict == INCOMPLETE


def test_an_interrupted_run_has_no_verdict_even_when_a_must_failed() -> None:
    """The test the interrupt hit fails or errs: no evidence against the driver."""
    catalog = {"M": info("M", "MUST")}
    for outcome in ({}, {"call": "failed"}, {"setup": "error"}):
        results = requirement_results(catalog, [record("t", "M", **outcome)])
        verdict = decide_verdict(results, interrupted=True)
        assert (verdict.verdict, verdict.exit_code) == (NO_VERDICT, 2), outcome
        assert verdict.no_verdict_reason == "the run was interrupted before it completed"
        assert verdict.reasons == ["no verdict: the run was interrupted before it completed"]
    set_up = decide_verdict([], no_verdict="the run could not be set up")
    assert (set_up.verdict, set_up.no_verdict_reason) == (NO_VERDICT, "the run could not be set up")


def test_a_scoped_pass_is_partial_never_conformant() -> None:
    catalog = {"C": info("C", "MUST"), "A": info("A", "MUST", "allocation")}
    partial = partial_selection(catalog, ["core"], "v1.37.2")
    assert partial == Partial(selected=1, total=2, not_selected=("A",))
    passed = requirement_results(catalog, [record("c", "C")], scope=["core"])
    verdict = decide_verdict(passed, partial=partial)
    assert (verdict.verdict, verdict.exit_code) == (PASSED_PARTIAL, 0)
    assert verdict.reasons == ["partial: 1 of 2 MUST selected; not selected: A"]
    assert verdict_text(verdict.verdict, partial.to_dict()) == (
        "PASSED (partial: 1 of 2 MUST selected) — not a certification"
    )
    # a failure or a MUST that did not run says so, partial or not
    failed = requirement_results(catalog, [record("c", "C", call="failed")], scope=["core"])
    assert decide_verdict(failed, partial=partial).verdict == NON_CONFORMANT
    missing = requirement_results(catalog, [], scope=["core"])
    assert decide_verdict(missing, partial=partial).verdict == INCOMPLETE


def test_a_selection_of_every_applicable_must_is_whole() -> None:
    catalog = {
        "C": info("C", "MUST"),
        "A": info("A", "MUST", "allocation"),
        "S": info("S", "SHOULD", "allocation"),
        "N": RequirementInfo("N", "security", "MUST", "newer", min_version=(1, 38)),
    }
    assert partial_selection(catalog, None, "v1.37.2") is None  # no scope: INCOMPLETE decides
    assert partial_selection(catalog, ["core", "A"], "v1.37.2") is None  # N is not in 1.37
    on_138 = partial_selection(catalog, ["core", "A"], "v1.38.0")
    assert on_138 == Partial(selected=2, total=3, not_selected=("N",))
    assert partial_selection(catalog, ["core"], "") == Partial(1, 3, ("A", "N"))  # unknown version


def test_an_id_outside_the_catalog_is_reported_but_does_not_decide() -> None:
    results = requirement_results({"M": info("M", "MUST")}, [record("a", "M"), record("b", "X")])
    assert [r.id for r in results] == ["M", "X"]
    assert "not in the requirements catalog" in results[1].reason
    assert decide_verdict(results).verdict == CONFORMANT


def test_verdict_scope_limits_what_decides() -> None:
    catalog = {
        "C": info("C", "MUST"),
        "A": info("A", "MUST", "allocation"),
        "A2": info("A2", "MUST", "allocation"),
    }
    records = [record("c", "C"), record("a2", "A2", call="failed")]
    results = {r.id: r for r in requirement_results(catalog, records, scope=["core"])}
    assert results["A"].status is RequirementStatus.NOT_RUN
    assert "outside the verdict scope (core)" in results["A"].reason
    assert results["A2"].status is RequirementStatus.FAILED  # still reported as it ran
    assert decide_verdict(results.values()).verdict == CONFORMANT
    assert decide_verdict(requirement_results(catalog, records)).verdict == NON_CONFORMANT
    drain = requirement_results(catalog, records, scope=["node_drain"])
    assert decide_verdict(drain).verdict == INCOMPLETE  # nothing selected was judged


@pytest.mark.parametrize(
    ("outcome", "verdict"),
    [
        ("passed", CONFORMANT),
        ("failed", NON_CONFORMANT),
        ("error", NON_CONFORMANT),
        ("not-applicable", CONFORMANT),
        ("not-run", INCOMPLETE),
    ],
)
def test_a_selection_without_a_must_is_judged_on_what_it_selected(outcome, verdict) -> None:
    catalog = {"M": info("M", "MUST"), "S": info("S", "SHOULD", "allocation")}
    records = [record("s", "S", **OUTCOMES[outcome])]
    decided = decide_verdict(requirement_results(catalog, records, scope=["S"]))
    assert (decided.verdict, decided.basis) == (verdict, "selected")


def test_a_harness_error_in_the_call_is_an_error_not_a_failure() -> None:
    class Report:
        nodeid, when, outcome, duration = "t", "call", "failed", 0.1
        longrepr = "E   FaultCommandError: fault withdraw: command ['x'] failed"
        user_properties: list = []
        dra_stamp = {"requirement": "R", PROP_OUTCOME: "error"}

    rec = TestRecord(nodeid="t", phases={"setup": "passed"})
    rec.add_report(Report())  # type: ignore[arg-type]
    assert rec.outcome is TestOutcome.ERROR
    assert rec.reason.startswith("call error: ")
    assert requirement_status([rec])[0] is RequirementStatus.ERROR


def test_a_must_the_harness_kept_from_completing_is_incomplete_never_non_conformant() -> None:
    harness = record("t1", "A", call="failed")
    harness.harness_error = True  # e.g. the workload image could not be pulled
    results = requirement_results({"A": info("A", "MUST"), "B": info("B", "MUST")}, [harness])
    verdict = decide_verdict([r for r in results if r.id == "A"])
    assert results[0].status is RequirementStatus.ERROR and results[0].harness_error
    assert verdict.verdict == INCOMPLETE
    assert "caused by the harness or the cluster, not the driver" in verdict.reasons[0]


def test_a_driver_error_beside_a_harness_error_is_still_non_conformant() -> None:
    harness = record("t1", "A", call="failed")
    harness.harness_error = True
    driver = record("t2", "A", setup="failed")  # a fixture error: not typed as the harness's
    results = requirement_results({"A": info("A", "MUST")}, [harness, driver])
    assert not results[0].harness_error
    assert decide_verdict(results).verdict == NON_CONFORMANT


# --- known platform issues (scenarios/known_issues.yaml) ------------------------------------

ISSUE = KnownIssue(
    requirement="DRA-LOSS-002",
    affected_from=Version("1.36.0"),
    fixed_in=Version("1.36.3"),
    link="https://github.com/kubernetes/kubernetes/pull/139681",
    summary="the scheduler ignores new DeviceTaintRules",
)


def test_a_failure_with_a_known_issue_is_not_met_and_not_blamed_on_the_driver() -> None:
    failed = record(
        "t::taint",
        "DRA-LOSS-002",
        call="failed",
        reason_call=f"{ISSUE.note} | AssertionError: the tainted device was allocated",
    )
    status, reason, _ = requirement_status([failed], ISSUE)
    assert status is RequirementStatus.KNOWN_PLATFORM_ISSUE
    assert reason == (
        f"{ISSUE.note}; t::taint: AssertionError: the tainted device was allocated"
    )  # the test-level note is not repeated
    # without the issue (another version) the same failure is the driver's
    assert requirement_status([failed], None)[0] is RequirementStatus.FAILED


def test_a_pass_on_an_affected_version_stays_a_pass_and_says_the_issue_did_not_show() -> None:
    status, reason, _ = requirement_status([record("t::taint", "DRA-LOSS-002")], ISSUE)
    assert status is RequirementStatus.PASSED
    assert reason == f"known platform issue {ISSUE.link} did not show"


def test_an_error_beside_the_known_failure_stays_an_error() -> None:
    records = [
        record("t::taint", "DRA-LOSS-002", call="failed"),
        record("t::other", "DRA-LOSS-002", setup="failed"),
    ]
    assert requirement_status(records, ISSUE)[0] is RequirementStatus.ERROR


def test_a_must_with_a_known_issue_makes_the_run_incomplete_naming_it_and_its_link() -> None:
    catalog = {i.id: i for i in (info("DRA-CORE-001", "MUST"), info("DRA-LOSS-002", "MUST"))}
    records = [
        record("t::core", "DRA-CORE-001"),
        record("t::taint", "DRA-LOSS-002", call="failed", reason_call="not kept off"),
    ]
    results = requirement_results(catalog, records, known_issues={"DRA-LOSS-002": ISSUE})
    assert [r.status for r in results] == [
        RequirementStatus.PASSED,
        RequirementStatus.KNOWN_PLATFORM_ISSUE,
    ]
    assert results[1].to_dict()["known_issue"] == {
        "link": ISSUE.link,
        "summary": ISSUE.summary,
        "versions": "1.36.0 to before 1.36.3",
    }
    verdict = decide_verdict(results)
    assert verdict.verdict == INCOMPLETE and verdict.exit_code == 3
    assert verdict.reasons == [
        f"DRA-LOSS-002 (MUST) failed with a {ISSUE.note}; t::taint: not kept off"
    ]


def test_another_failed_must_still_makes_the_run_non_conformant() -> None:
    catalog = {i.id: i for i in (info("DRA-CORE-001", "MUST"), info("DRA-LOSS-002", "MUST"))}
    records = [
        record("t::core", "DRA-CORE-001", call="failed"),
        record("t::taint", "DRA-LOSS-002", call="failed"),
    ]
    results = requirement_results(catalog, records, known_issues={"DRA-LOSS-002": ISSUE})
    verdict = decide_verdict(results)
    assert verdict.verdict == NON_CONFORMANT
    assert [r.split(" ")[0] for r in verdict.reasons] == ["DRA-CORE-001", "DRA-LOSS-002"]


def test_a_should_with_a_known_issue_does_not_decide_the_verdict() -> None:
    catalog = {i.id: i for i in (info("DRA-CORE-001", "MUST"), info("DRA-LOSS-002", "SHOULD"))}
    records = [record("t::core", "DRA-CORE-001"), record("t::taint", "DRA-LOSS-002", call="failed")]
    results = requirement_results(catalog, records, known_issues={"DRA-LOSS-002": ISSUE})
    assert results[1].status is RequirementStatus.KNOWN_PLATFORM_ISSUE
    assert decide_verdict(results).verdict == CONFORMANT


def test_a_run_in_which_no_must_passed_is_never_conformant() -> None:
    catalog = {"A": info("A", "MUST"), "B": info("B", "MUST"), "C": info("C", "SHOULD")}
    records = [
        record("t::a", "A", skip=NA),
        record("t::b", "B", skip=NA),
        record("t::c", "C"),  # a SHOULD that passed shows nothing a MUST asks
    ]
    verdict = decide_verdict(requirement_results(catalog, records))
    assert verdict.verdict == INCOMPLETE
    assert verdict.reasons == [
        "no MUST requirement passed: all 2 in scope are not applicable (A, B), so nothing of "
        "the driver was shown"
    ]
    records[0] = record("t::a", "A")
    assert decide_verdict(requirement_results(catalog, records)).verdict == CONFORMANT


def test_a_modified_run_is_its_own_verdict() -> None:
    from conformance.report.verdict import MODIFIED, mark_modified

    catalog = {"A": info("A", "MUST")}
    verdict = mark_modified(
        decide_verdict(requirement_results(catalog, [record("t::a", "A")])),
        ["the requirements catalog x.yaml is not the suite's own"],
    )
    assert (verdict.verdict, verdict.unmodified, verdict.exit_code) == (MODIFIED, CONFORMANT, 4)
    assert verdict.reasons[0] == (
        "modified suite: the requirements catalog x.yaml is not the suite's own"
    )
    assert verdict_text(MODIFIED) == "MODIFIED SUITE — not a certification"
    stopped = decide_verdict([], no_verdict="interrupted")
    assert mark_modified(stopped, ["x"]).verdict == NO_VERDICT  # no verdict stays none


def test_a_requirement_a_stopped_run_never_reached_says_so() -> None:
    catalog = {"A": info("A", "MUST"), "B": info("B", "MUST")}
    results = requirement_results(catalog, [record("t::a", "A")], stopped="it was interrupted")
    reached, missed = results
    assert reached.status is RequirementStatus.PASSED
    assert (missed.status, missed.reason, missed.remedy) == (
        RequirementStatus.NOT_RUN,
        "not reached: the run stopped (it was interrupted)",
        "run the suite again to completion",
    )
    plain = requirement_results(catalog, [record("t::a", "A")])[1]
    assert plain.reason.startswith("no test of it ran in this run")


def test_a_selection_of_a_promised_may_alone_is_judged_on_what_it_selected() -> None:
    catalog = {
        "MUST-1": info("MUST-1", "MUST"),
        "MAY-1": RequirementInfo("MAY-1", "allocation", "MAY", "x", capabilities=("opaque",)),
    }
    results = requirement_results(
        catalog, [record("may", "MAY-1")], scope=["MAY-1"], declared=("opaque",)
    )
    verdict = decide_verdict(results)
    assert verdict.basis == "selected"
    failed = requirement_results(
        catalog, [record("may", "MAY-1", call="failed")], scope=["MAY-1"], declared=("opaque",)
    )
    assert decide_verdict(failed).verdict == NON_CONFORMANT
