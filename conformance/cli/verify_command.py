"""`dra-conformance verify REPORT_DIR`: re-check a published report (conformance/report/verify.py).

Prints one line. Exit codes: 0 it verifies (junit.xml, summary.json and summary.md agree, and the
run used this suite, unmodified), 1 it does not (the line says what differs), 2 REPORT_DIR is not
a report that can be read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_verify_command(sub: argparse._SubParsersAction) -> None:
    verify = sub.add_parser(
        "verify",
        help="re-check a report: its verdict from junit.xml, and that the suite was this one",
        description="Recompute the verdict of a report directory from its junit.xml with the "
        "run's own code and compare it with summary.json (and summary.md), then check that "
        "the run used this suite unmodified: its version and the sha256 of its requirements "
        "catalog, known-issue list and scenario tree. Exit codes: 0 verified, 1 not verified "
        "(the line says what differs), 2 not a readable report directory.",
    )
    verify.add_argument("report_dir", type=Path, metavar="REPORT_DIR", help="reports/<run>")
    verify.set_defaults(func=_verify)


def _verify(args: argparse.Namespace) -> int:
    from conformance.report.verify import ReportInputError, verify_report

    try:
        result = verify_report(args.report_dir)
    except ReportInputError as exc:
        print(f"dra-conformance: error: {exc}", file=sys.stderr)
        return 2
    print(result.line)
    return 0 if result.verified else 1
