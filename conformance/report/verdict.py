"""Per-requirement status from test outcomes, and the run's verdict.

CONFORMANT iff every applicable MUST requirement passed: a MUST requirement that failed, errored,
was skipped for any reason other than non-applicability, or has no result at all makes the run
NON-CONFORMANT. SHOULD and MAY requirements are reported, never fatal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from conformance.report.catalog import RequirementInfo
from conformance.report.outcomes import TestOutcome, TestRecord

CONFORMANT = "CONFORMANT"
NON_CONFORMANT = "NON-CONFORMANT"


class RequirementStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_APPLICABLE = "not-applicable"
    SKIPPED = "skipped"


NO_RESULT_REASON = "no test result: no test for this requirement ran in this run"
OUT_OF_SCOPE_REASON = "not judged: outside the verdict scope ({scope})"


@dataclass
class RequirementResult:
    id: str
    level: str
    suite: str
    statement: str
    status: RequirementStatus
    duration_s: float = 0.0
    reason: str = ""
    tests: list[str] = field(default_factory=list)
    ran: bool = True  # False when no test reported a result
    in_scope: bool = True  # False: its suite is outside the verdict scope

    @property
    def blocks_conformance(self) -> bool:
        """True when this result alone makes the run NON-CONFORMANT."""
        if self.level != "MUST" or not self.in_scope:
            return False
        return self.status not in (RequirementStatus.PASSED, RequirementStatus.NOT_APPLICABLE)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "level": self.level,
            "suite": self.suite,
            "statement": self.statement,
            "status": str(self.status),
            "duration_s": round(self.duration_s, 3),
            "reason": self.reason,
            "tests": list(self.tests),
        }


def requirement_status(records: list[TestRecord]) -> tuple[RequirementStatus, str]:
    """Status and reason of one requirement from the tests that carry its ID."""
    outcomes = [r.outcome for r in records]
    for record in records:
        if record.outcome in (TestOutcome.FAILED, TestOutcome.ERROR):
            return RequirementStatus.FAILED, f"{record.nodeid}: {record.reason}"
    for record in records:
        if record.outcome is TestOutcome.SKIPPED:
            return RequirementStatus.SKIPPED, f"{record.nodeid}: skipped: {record.reason}"
    if TestOutcome.PASSED in outcomes:
        return RequirementStatus.PASSED, ""
    reasons = sorted({r.reason for r in records if r.reason})
    return RequirementStatus.NOT_APPLICABLE, "; ".join(reasons)


def requirement_results(
    catalog: Mapping[str, RequirementInfo],
    records: Iterable[TestRecord],
    scope: Iterable[str] | None = None,
) -> list[RequirementResult]:
    """One result per catalog requirement (catalog order), then IDs the catalog lacks.

    `scope` (suite names or requirement IDs; None = every suite) limits which requirements
    decide the verdict: the others are still reported, a missing one as skipped rather than
    failed.
    """
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
            results.append(_result(info, tested))
            results[-1].in_scope = in_scope
        elif not in_scope:
            scope_text = ", ".join(judged or [])
            results.append(
                RequirementResult(
                    id=info.id,
                    level=info.level,
                    suite=info.suite,
                    statement=info.statement,
                    status=RequirementStatus.SKIPPED,
                    reason=OUT_OF_SCOPE_REASON.format(suite=info.suite, scope=scope_text),
                    ran=False,
                    in_scope=False,
                )
            )
        else:
            status = RequirementStatus.FAILED if info.level == "MUST" else RequirementStatus.SKIPPED
            results.append(
                RequirementResult(
                    id=info.id,
                    level=info.level,
                    suite=info.suite,
                    statement=info.statement,
                    status=status,
                    reason=NO_RESULT_REASON,
                    ran=False,
                )
            )
    for req_id in sorted(set(by_id) - set(catalog)):
        unknown = RequirementInfo(id=req_id, suite="", level="", statement="")
        result = _result(unknown, by_id[req_id])
        result.reason = "; ".join(
            x for x in (result.reason, "not in the requirements catalog") if x
        )
        results.append(result)
    return results


def _result(info: RequirementInfo, records: list[TestRecord]) -> RequirementResult:
    status, reason = requirement_status(records)
    return RequirementResult(
        id=info.id,
        level=info.level,
        suite=info.suite,
        statement=info.statement,
        status=status,
        duration_s=sum(r.duration_s for r in records),
        reason=reason,
        tests=[r.nodeid for r in records],
    )


def decide_verdict(
    results: Iterable[RequirementResult],
    *,
    catalog_error: str | None = None,
    collection_errors: int = 0,
    interrupted: bool = False,
) -> tuple[str, list[str]]:
    """(CONFORMANT | NON-CONFORMANT, the reasons it is not conformant)."""
    reasons: list[str] = []
    if catalog_error:
        reasons.append(f"the requirements catalog could not be read: {catalog_error}")
    if collection_errors:
        reasons.append(f"{collection_errors} collection error(s): the suite did not load cleanly")
    if interrupted:
        reasons.append("the run was interrupted before it completed")
    results = list(results)
    if not catalog_error and not any(r.level == "MUST" and r.in_scope for r in results):
        reasons.append("no MUST requirement is in the catalog (or in the verdict scope)")
    for result in results:
        if result.blocks_conformance:
            what = "no result" if not result.ran else str(result.status)
            reasons.append(f"{result.id} (MUST) {what}: {result.reason}")
    return (NON_CONFORMANT if reasons else CONFORMANT), reasons
