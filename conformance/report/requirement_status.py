"""One requirement's status from the outcomes of its tests (pure): the worst outcome decides,
a known platform issue turns a failure into `known-platform-issue`, and a test run only to probe
an undeclared capability observes without deciding."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from conformance.model.known_issues import NOTE_PREFIX, KnownIssue
from conformance.report.outcomes import TestOutcome, TestRecord


class RequirementStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    NOT_APPLICABLE = "not-applicable"
    NOT_RUN = "not-run"
    # failed on a version with a known upstream bug for it (conformance/model/known_issues.py)
    KNOWN_PLATFORM_ISSUE = "known-platform-issue"


MET = (RequirementStatus.PASSED, RequirementStatus.NOT_APPLICABLE)
BROKEN = (RequirementStatus.FAILED, RequirementStatus.ERROR)


def strip_note(reason: str, issue: KnownIssue) -> str:
    """A failure's text without the test-level note (the collector prefixes it for JUnit)."""
    return reason.removeprefix(f"{issue.note} | ")


def requirement_status(
    records: list[TestRecord], issue: KnownIssue | None = None
) -> tuple[RequirementStatus, str, str]:
    """Status, reason and remedy of one requirement from the tests that carry its ID.

    The worst outcome decides: failed, error, not run (a requirement is not met while one of
    its tests did not run), passed; not applicable only when every test was. With `issue` (a
    known platform issue of the cluster's version) a failure is `known-platform-issue`, and a
    pass says the issue did not show.
    """
    failed = [r for r in records if r.outcome is TestOutcome.FAILED]
    errors = [r for r in records if r.outcome is TestOutcome.ERROR]
    if failed and issue is not None and errors:  # the failure is the platform's, the error not
        return RequirementStatus.ERROR, f"{errors[0].nodeid}: {errors[0].reason}", ""
    if failed and issue is not None:
        record = failed[0]
        return (
            RequirementStatus.KNOWN_PLATFORM_ISSUE,
            f"{issue.note}; {record.nodeid}: {strip_note(record.reason, issue)}",
            "",
        )
    for outcome, status in (
        (TestOutcome.FAILED, RequirementStatus.FAILED),
        (TestOutcome.ERROR, RequirementStatus.ERROR),
        (TestOutcome.NOT_RUN, RequirementStatus.NOT_RUN),
    ):
        for record in records:
            if record.outcome is outcome:
                return status, f"{record.nodeid}: {record.reason}", record.remedy
    if any(r.outcome is TestOutcome.PASSED for r in records):
        if issue is not None:
            return RequirementStatus.PASSED, f"{NOTE_PREFIX} {issue.link} did not show", ""
        return RequirementStatus.PASSED, "", ""
    reasons = sorted({r.reason for r in records if r.reason})
    return RequirementStatus.NOT_APPLICABLE, "; ".join(reasons), ""


PROBED_REASON = (
    "the profile does not declare {capabilities} (probed: {observed}; outside the verdict)"
)


def probe_observation(records: Iterable[TestRecord]) -> str:
    """What the probe tests of one requirement observed: working, not working, not observed."""
    outcomes = {r.outcome for r in records}
    if outcomes & {TestOutcome.FAILED}:
        return "not working"
    if outcomes == {TestOutcome.PASSED}:
        return "working"
    return "not observed"
