"""Known platform issues on a test's failure: the note a failed test gets when a requirement it
proves has a known upstream bug on the cluster's version (scenarios/known_issues.yaml).

Runs where the test runs (xdist workers too), from the collector's makereport: the failure's
message is prefixed with "known platform issue <link>: <summary> | ", which JUnit's failure
message, the terminal and Allure then show; the report's requirement status is decided from
the same list on the controller (conformance/report/verdict.py).
"""

from __future__ import annotations

import pytest

from conformance.model.known_issues import KnownIssue, affecting
from conformance.report.catalog import known_issues_for
from conformance.report.facts import get_run_facts
from conformance.report.outcomes import (
    PROP_KNOWN_ISSUE,
    report_stamp,
    stamp_report,
    suite_requirement,
)


def issue_for_item(item: pytest.Item) -> KnownIssue | None:
    """The known issue of the cluster's version for a requirement `item` proves, or None."""
    facts = get_run_facts(item.config)
    if facts is None or not facts.kubernetes_version:
        return None
    issues, _ = known_issues_for(item.config)
    found = affecting(issues, facts.kubernetes_version)
    requirement = suite_requirement(item)  # only the suite's own tests
    return found.get(requirement) if requirement else None


def annotate_failure(item: pytest.Item, report: pytest.TestReport, issue: KnownIssue) -> None:
    """Prefix the failed call's message with the issue's note and record its link."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None and not str(crash.message).startswith(issue.note):
        crash.message = f"{issue.note} | {crash.message}"
    report.sections.append(("known platform issue", f"{issue.note} ({issue.versions})"))
    stamp_report(report, **{PROP_KNOWN_ISSUE: issue.link})  # JUnit gets it from the collector


def known_issue_link(report: pytest.TestReport) -> str | None:
    return report_stamp(report).get(PROP_KNOWN_ISSUE)
