"""Per-requirement status from typed test outcomes, and the run's verdict.

Statuses: passed, failed, error, not-applicable, not-run, known-platform-issue
(docs/CONTRACTS.md). The verdict:

- CONFORMANT: every MUST requirement passed or is not applicable;
- NON-CONFORMANT: an applicable MUST requirement failed or errored;
- INCOMPLETE: otherwise — a MUST that did not run (or has no result) is never counted as met,
  nor is one that failed on a Kubernetes version with a known platform issue for it
  (scenarios/known_issues.yaml): that failure is not blamed on the driver, and not a pass;
  nor is one that erred only because of the harness or the cluster (a `HarnessError`: the
  workload image could not be pulled, a fault could not be injected).

SHOULD and MAY requirements are reported, never decisive — except a promised one (every
capability it needs is declared in the profile: a declared capability is a promise, so a driver
that declares admin access and refuses an admin-access claim is NON-CONFORMANT), and in a
partial run whose selection holds no MUST (e.g. `--dra-requirement DRA-ALLOC-014`): it is
judged on the selected requirements of every level, and says so.

Two more words, never CONFORMANT:

- PASSED-PARTIAL: the run would be CONFORMANT, but the user scoped it (`--dra-verdict-scope`,
  `--dra-requirement`) to fewer than every MUST that applies to the cluster's version: it passed
  what it selected and is not a certification (exit 0, so CI gates on a subset still work);
- NO-VERDICT: the run has none — it could not be set up, was interrupted, pytest broke, or it
  has not finished (exit 2). What ran is still reported, and decides nothing.
- MODIFIED: the run did not use the suite as it is (a swapped catalog, an edited file, a plugin
  or conftest from outside it: conformance/report/provenance.py). Whatever its tests said, it
  certifies nothing (exit 4); `unmodified_verdict` keeps what they said, for the developer.

A run in which no MUST passed (every one that applies is not applicable) shows nothing of the
driver: it is INCOMPLETE, never CONFORMANT.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from conformance.model.known_issues import KnownIssue
from conformance.report.catalog import RequirementInfo
from conformance.report.outcomes import TestOutcome, TestRecord

# One requirement's status lives in its own module; its names stay importable from here.
from conformance.report.requirement_status import (  # noqa: F401
    BROKEN,
    MET,
    PROBED_REASON,
    RequirementStatus,
    probe_observation,
    requirement_status,
    strip_note,
)

CONFORMANT = "CONFORMANT"
PASSED_PARTIAL = "PASSED-PARTIAL"
NON_CONFORMANT = "NON-CONFORMANT"
INCOMPLETE = "INCOMPLETE"
NO_VERDICT = "NO-VERDICT"
MODIFIED = "MODIFIED"
MODIFIED_TEXT = "MODIFIED SUITE — not a certification"
# 2 is also a usage error of the command line
EXIT_CODES = {
    CONFORMANT: 0,
    PASSED_PARTIAL: 0,
    NON_CONFORMANT: 1,
    NO_VERDICT: 2,
    INCOMPLETE: 3,
    MODIFIED: 4,
}
PASSING = (CONFORMANT, PASSED_PARTIAL)  # what exits 0


NO_RESULT_REASON = "no test of it ran in this run (deselected, or its test did not load)"
NO_RESULT_REMEDY = "select its suite, or fix the collection error"
NOT_REACHED_REASON = "not reached: the run stopped ({why})"
NOT_REACHED_REMEDY = "run the suite again to completion"
OUT_OF_SCOPE_REASON = "not judged: outside the verdict scope ({scope})"
INTERRUPTED_REASON = "the run was interrupted before it completed"


@dataclass
class RequirementResult:
    id: str
    level: str
    suite: str
    statement: str
    status: RequirementStatus
    duration_s: float = 0.0
    reason: str = ""
    remedy: str = ""  # for not-run: what would make it run
    tests: list[str] = field(default_factory=list)
    ran: bool = True  # False when no test reported a result
    in_scope: bool = True  # False: its suite is outside the verdict scope
    known_issue: KnownIssue | None = None  # a known platform issue of the cluster's version
    # an error every one of whose tests the harness or the cluster caused (a HarnessError: an
    # image that cannot be pulled, a fault that could not be injected): never the driver's
    harness_error: bool = False
    min_version: tuple[int, int] | None = None  # the Kubernetes minor that brought it
    # A SHOULD or MAY whose every capability the profile declares: a declared capability is a
    # promise, so its requirement decides the verdict as a MUST does.
    promised_by: tuple[str, ...] = ()

    @property
    def judged_level(self) -> str:
        """Its level as the verdict reads it ("MAY, promised by admin-access")."""
        if not self.promised_by or self.level == "MUST":
            return self.level
        return f"{self.level}, promised by the declared {', '.join(self.promised_by)}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "level": self.level,
            "suite": self.suite,
            "statement": self.statement,
            "status": str(self.status),
            "duration_s": round(self.duration_s, 3),
            "reason": self.reason,
            "remedy": self.remedy,
            "tests": list(self.tests),
            "known_issue": _issue_dict(self.known_issue),
            "harness_error": self.harness_error,
            "promised_by": list(self.promised_by),
            "min_version": (
                None if self.min_version is None else ".".join(map(str, self.min_version))
            ),
        }


def _issue_dict(issue: KnownIssue | None) -> dict[str, str] | None:
    if issue is None:
        return None
    return {"link": issue.link, "summary": issue.summary, "versions": issue.versions}


def requirement_results(
    catalog: Mapping[str, RequirementInfo],
    records: Iterable[TestRecord],
    scope: Iterable[str] | None = None,
    known_issues: Mapping[str, KnownIssue] | None = None,
    stopped: str = "",
    declared: Iterable[str] = (),
) -> list[RequirementResult]:
    """One result per catalog requirement (catalog order), then IDs the catalog lacks.

    `declared`: the profile's capabilities; a SHOULD or MAY all of whose capabilities are
    declared is promised (`promised_by`) and judged as a MUST.

    `stopped`: why the run stopped before it completed (a run with no verdict); a requirement
    with no test was then not reached, rather than deselected.

    `scope` (suite names or requirement IDs; None = every suite) limits which requirements
    decide the verdict: the others are still reported, a missing one as skipped rather than
    not run. `known_issues`: {requirement ID: issue} of the cluster's version
    (`conformance.model.known_issues.affecting`).
    """
    known_issues = known_issues or {}
    judged = None if scope is None else sorted(set(scope))  # suites and requirement IDs
    by_id: dict[str, list[TestRecord]] = {}
    for record in records:
        for req_id in record.requirements:
            by_id.setdefault(req_id, []).append(record)

    results: list[RequirementResult] = []
    for req_id, info in catalog.items():
        tested = by_id.get(req_id, [])
        in_scope = judged is None or info.suite in judged or info.id in judged
        if tested:
            results.append(_result(info, tested, known_issues.get(req_id)))
            results[-1].in_scope = in_scope
        elif not in_scope:
            scope_text = ", ".join(judged or [])
            results.append(
                RequirementResult(
                    id=info.id,
                    level=info.level,
                    suite=info.suite,
                    statement=info.statement,
                    min_version=info.min_version,
                    status=RequirementStatus.NOT_RUN,
                    reason=OUT_OF_SCOPE_REASON.format(suite=info.suite, scope=scope_text),
                    ran=False,
                    in_scope=False,
                )
            )
        else:
            results.append(
                RequirementResult(
                    id=info.id,
                    level=info.level,
                    suite=info.suite,
                    statement=info.statement,
                    min_version=info.min_version,
                    status=RequirementStatus.NOT_RUN,
                    reason=NOT_REACHED_REASON.format(why=stopped) if stopped else NO_RESULT_REASON,
                    remedy=NOT_REACHED_REMEDY if stopped else NO_RESULT_REMEDY,
                    ran=False,
                )
            )
    promises = frozenset(declared)
    for result in results:
        info = catalog[result.id]
        if info.level != "MUST" and info.capabilities and promises >= set(info.capabilities):
            result.promised_by = tuple(info.capabilities)
    for req_id in sorted(set(by_id) - set(catalog)):
        unknown = RequirementInfo(id=req_id, suite="", level="", statement="")
        result = _result(unknown, by_id[req_id])
        result.reason = "; ".join(
            x for x in (result.reason, "not in the requirements catalog") if x
        )
        results.append(result)
    return results


def _result(
    info: RequirementInfo, records: list[TestRecord], issue: KnownIssue | None = None
) -> RequirementResult:
    judged = [r for r in records if not r.probe]
    if not judged:  # run only to observe undeclared capabilities: never decides
        probed = sorted({c for r in records for c in r.probe})
        result = _result(info, [replace(r, probe=()) for r in records], issue)
        result.status, result.remedy = RequirementStatus.NOT_APPLICABLE, ""
        result.reason = PROBED_REASON.format(
            capabilities=", ".join(probed), observed=probe_observation(records)
        )
        result.harness_error = False
        return result
    records = judged
    status, reason, remedy = requirement_status(records, issue)
    return RequirementResult(
        id=info.id,
        level=info.level,
        suite=info.suite,
        statement=info.statement,
        min_version=info.min_version,
        status=status,
        duration_s=sum(r.duration_s for r in records),
        reason=reason,
        remedy=remedy,
        tests=[r.nodeid for r in records],
        known_issue=issue,
        harness_error=status is RequirementStatus.ERROR
        and all(r.harness_error for r in records if r.outcome is TestOutcome.ERROR),
    )


@dataclass(frozen=True)
class Partial:
    """A selection the user scoped to fewer than every MUST that applies to the cluster."""

    selected: int  # applicable MUSTs in the verdict scope
    total: int  # MUSTs that apply to the cluster's version
    not_selected: tuple[str, ...]  # the applicable MUSTs outside it

    def to_dict(self) -> dict[str, Any]:
        return {
            "selected": self.selected,
            "total": self.total,
            "not_selected": list(self.not_selected),
        }


@dataclass(frozen=True)
class Verdict:
    verdict: str  # CONFORMANT | PASSED-PARTIAL | NON-CONFORMANT | INCOMPLETE | NO-VERDICT
    reasons: list[str]  # why it is not CONFORMANT (empty when it is)
    basis: str  # "MUST": judged on the MUST requirements; "selected": on every selected one
    partial: Partial | None = None  # set whenever the scope left an applicable MUST out
    no_verdict_reason: str = ""  # why there is none (NO-VERDICT only)
    unmodified: str = ""  # MODIFIED only: the verdict the run's tests gave

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]


def verdict_text(verdict: str, partial: Mapping[str, Any] | None = None) -> str:
    """The words every format shows for a verdict (summary.md title, terminal, CLI)."""
    if verdict == PASSED_PARTIAL and partial:
        return (
            f"PASSED (partial: {partial['selected']} of {partial['total']} MUST selected)"
            " — not a certification"
        )
    if verdict == NO_VERDICT:
        return "NO VERDICT"
    if verdict == MODIFIED:
        return MODIFIED_TEXT
    return verdict


def mark_modified(verdict: Verdict, why: Iterable[str]) -> Verdict:
    """A modified run's verdict: MODIFIED, with why first; a run with no verdict keeps none."""
    if verdict.verdict == NO_VERDICT:
        return verdict
    reasons = [f"modified suite: {reason}" for reason in why]
    reasons.append(f"the run's tests alone would give {verdict_text(verdict.verdict)}")
    return replace(
        verdict, verdict=MODIFIED, reasons=reasons + verdict.reasons, unmodified=verdict.verdict
    )


def decide_verdict(
    results: Iterable[RequirementResult],
    *,
    catalog_error: str | None = None,
    collection_errors: int = 0,
    interrupted: bool = False,
    no_verdict: str = "",
    partial: Partial | None = None,
    problems: Iterable[str] = (),
) -> Verdict:
    """The verdict over the requirements in scope.

    `no_verdict` (why the run has none) or `interrupted` make it NO-VERDICT whatever ran: a
    test the interrupt hit is no evidence against the driver. `partial` (the user's scope left
    an applicable MUST out) turns what would be CONFORMANT into PASSED-PARTIAL. `problems`: what
    else keeps the run from a verdict (a test outside the suite that claimed a requirement):
    each is a reason, and the verdict cannot be CONFORMANT.
    """
    if interrupted and not no_verdict:
        no_verdict = INTERRUPTED_REASON
    if no_verdict:
        return Verdict(NO_VERDICT, [f"no verdict: {no_verdict}"], "MUST", partial, no_verdict)
    results = [r for r in results if r.in_scope]
    judged = [r for r in results if r.level == "MUST" or r.promised_by]
    basis = "MUST"
    if not any(r.level == "MUST" for r in judged) and results and not catalog_error:
        judged, basis = results, "selected"  # a partial run with no MUST in it
    harness = [r for r in judged if r.status in BROKEN and r.harness_error]
    broken = [r for r in judged if r.status in BROKEN and not r.harness_error]
    known = [r for r in judged if r.status is RequirementStatus.KNOWN_PLATFORM_ISSUE]
    not_run = [
        r for r in judged if r.status not in MET and r.status not in BROKEN and r not in known
    ]
    reasons = [f"{r.id} ({r.judged_level}) {r.status}: {r.reason}" for r in broken]
    reasons += [f"{r.id} ({r.judged_level}) failed with a {r.reason}" for r in known]
    reasons += [
        f"{r.id} ({r.judged_level}) error caused by the harness or the cluster, not the driver: "
        f"{r.reason}"
        for r in harness
    ]
    for result in not_run:
        remedy = f" — to run it: {result.remedy}" if result.remedy else ""
        reasons.append(f"{result.id} ({result.judged_level}) not run: {result.reason}{remedy}")
    incomplete: list[str] = []
    if catalog_error:
        incomplete.append(f"the requirements catalog could not be read: {catalog_error}")
    if collection_errors:
        incomplete.append(f"{collection_errors} collection error(s): the suite did not load")
    incomplete.extend(problems)
    if not judged and not catalog_error:
        incomplete.append("no requirement was selected (or is in the verdict scope)")
    reasons += incomplete
    if broken:
        verdict = NON_CONFORMANT
    elif not_run or incomplete or known or harness:
        verdict = INCOMPLETE
    elif basis == "MUST" and not any(r.status is RequirementStatus.PASSED for r in judged):
        verdict = INCOMPLETE
        reasons.append(
            f"no MUST requirement passed: all {len(judged)} in scope are not applicable "
            f"({', '.join(r.id for r in judged[:6])}{' …' if len(judged) > 6 else ''}), so "
            "nothing of the driver was shown"
        )
    elif partial is not None:
        verdict = PASSED_PARTIAL
        reasons.append(
            f"partial: {partial.selected} of {partial.total} MUST selected; not selected: "
            + ", ".join(partial.not_selected)
        )
    else:
        verdict = CONFORMANT
    return Verdict(verdict, reasons, basis, partial)
