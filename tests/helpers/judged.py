"""The verdict a run's own tests gave, for runs that are modified by design.

The project's tests run the harness on fake scenario trees and catalogs of their own, or the
report without the harness (`-p conformance.report.standalone`): such a run is never the suite,
its verdict is MODIFIED, and what its tests alone gave is kept in `unmodified_verdict`. Tests of
the verdict logic read that, through this view, after checking the run says it is modified.
"""

from __future__ import annotations

from typing import Any

from conformance.report.verdict import EXIT_CODES, MODIFIED, verdict_text

_MODIFIED_PREFIX = "modified suite: "
_TESTS_ALONE = "the run's tests alone would give "


def judged(summary: dict[str, Any]) -> dict[str, Any]:
    """`summary` with verdict, verdict_text, verdict_reasons and exit_code as the run's tests
    gave them; a summary that is not MODIFIED as it is."""
    if summary.get("verdict") != MODIFIED:
        return summary
    assert summary["modified"] and summary["modified_reasons"], summary
    assert summary["exit_code"] == EXIT_CODES[MODIFIED]
    verdict = summary["unmodified_verdict"]
    reasons = [
        r
        for r in summary["verdict_reasons"]
        if not r.startswith(_MODIFIED_PREFIX) and not r.startswith(_TESTS_ALONE)
    ]
    return {
        **summary,
        "verdict": verdict,
        "verdict_text": verdict_text(verdict, summary.get("partial")),
        "verdict_reasons": reasons,
        "exit_code": EXIT_CODES[verdict],
    }
