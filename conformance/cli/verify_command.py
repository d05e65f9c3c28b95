"""`dra-conformance verify REPORT_DIR [--key PUB]`: re-check a published report
(conformance/report/verify.py).

Prints one line. Exit codes: 0 verified (signed with the key, the files agree, and the run used
this suite, unmodified), 1 not verified (the line says what differs), 2 REPORT_DIR or the key
cannot be read, 3 unsigned (no --key: the files agree with each other, which anyone editing
them consistently could achieve).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_verify_command(sub: argparse._SubParsersAction) -> None:
    verify = sub.add_parser(
        "verify",
        help="re-check a report: its signature, its verdict from junit.xml, the suite it used",
        description="With --key, check the report's signature (attestation.dsse.json) and "
        "that every file is what was signed. Then recompute the verdict of the report from "
        "its junit.xml with the suite's own code and catalog and compare it with summary.json "
        "(and summary.md), check that the run used this suite unmodified, and that each test's "
        "outcome in allure-results/ and evidence.tar.gz is junit.xml's. Exit codes: 0 "
        "verified (signed), 1 not verified (the line says what differs), 2 not a readable "
        "report directory or key, 3 unsigned (the files agree with each other: re-run the "
        "suite, or ask for a signed report).",
    )
    verify.add_argument("report_dir", type=Path, metavar="REPORT_DIR", help="reports/<run>")
    verify.add_argument(
        "--key",
        type=Path,
        metavar="PUB",
        help="the signer's public key (PEM, as `openssl pkey -pubout` writes it)",
    )
    verify.set_defaults(func=_verify)


def _verify(args: argparse.Namespace) -> int:
    from conformance.errors import ConformanceError
    from conformance.report.verify import ReportInputError, verify_report

    try:
        key = args.key.read_bytes() if args.key else None
    except OSError as exc:
        raise ConformanceError(
            f"--key {args.key}: cannot be read ({exc.strerror})", "give the public key's file"
        ) from None
    try:
        result = verify_report(args.report_dir, public_key=key)
    except ReportInputError as exc:
        print(f"dra-conformance: error: {exc}", file=sys.stderr)
        return 2
    print(result.line)
    return result.exit_code
