"""What `dra-conformance run` says and exits with once pytest returns: this run's verdict, read
from the summary only when it carries this run's id (conformance/report/no_verdict.py), or none.

The last line names the run id, the report directory, the MUSTs a partial run did not select,
and ends with the verdict as every format words it (`verdict CONFORMANT`, `verdict PASSED
(partial: N of M MUST selected) — not a certification`, `NO VERDICT: <why>`, `MODIFIED SUITE —
not a certification: <why>`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from conformance.report.no_verdict import RUNNING, STOPPED, own_summary, write_no_verdict
from conformance.report.verdict import EXIT_CODES, MODIFIED, NO_VERDICT, verdict_text

NO_VERDICT_EXIT = EXIT_CODES[NO_VERDICT]


def finish(
    report_dir: Path, run_id: str, pytest_code: int, started: float, sign_key: bytes | None = None
) -> int:
    """Sign the report when given a key, print the run's last line and return its exit code."""
    summary = own_summary(report_dir, run_id)
    if summary is None or summary.get("no_verdict_reason") == RUNNING:
        # pytest ended before the report was written (its own usage error, a crash): say so
        # once here, and leave a report that says the same
        reason = STOPPED.format(code=pytest_code)
        summary = write_no_verdict(report_dir, run_id, reason, started=started)
        print(f"dra-conformance: error: {reason}; see pytest's message above", file=sys.stderr)
    if sign_key is not None:
        sign_run_report(report_dir, summary, sign_key)
    print(last_line(summary, report_dir), file=sys.stderr if _no_verdict(summary) else sys.stdout)
    return EXIT_CODES.get(str(summary.get("verdict")), NO_VERDICT_EXIT)


def _no_verdict(summary: dict[str, Any]) -> bool:
    return summary.get("verdict") not in EXIT_CODES or summary.get("verdict") == NO_VERDICT


def last_line(summary: dict[str, Any], report_dir: Path) -> str:
    where = f"run {(summary.get('run') or {}).get('id')}, report in {report_dir}"
    if _no_verdict(summary):
        reason = summary.get("no_verdict_reason") or "the summary names no verdict"
        return f"dra-conformance: {where}; NO VERDICT: {reason}"
    if summary.get("verdict") == MODIFIED:
        why = "; ".join(summary.get("modified_reasons") or [])
        return f"dra-conformance: {where}; {verdict_text(MODIFIED)}: {why}"
    partial = summary.get("partial")
    listed = ""
    if partial and partial.get("not_selected"):
        listed = f"; MUST not selected: {', '.join(partial['not_selected'])}"
    return f"dra-conformance: {where}{listed}; verdict {verdict_text(summary['verdict'], partial)}"


def sign_run_report(report_dir: Path, summary: dict[str, Any], key: bytes) -> None:
    """Sign the finished report: every file, and what it certifies as the predicate."""
    from conformance.report.signing import sign_report

    predicate = {
        field: summary.get(field)
        for field in ("run", "verdict", "verdict_text", "modified", "driver", "provenance")
    }
    path = sign_report(report_dir, key, predicate)
    print(f"dra-conformance: signed the report: {path}")
