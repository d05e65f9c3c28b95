"""`dra-conformance matrix REPORT_DIR... [--markdown F] [--html F] [--notes N] [--key PUB]
[--allow-unsigned]`: several verified reports side by side (conformance/report/matrix*.py).

Every report is checked with `verify`'s code first; one that does not verify (or is unsigned
without --allow-unsigned) is refused with one line, and then nothing is written (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance.errors import ConformanceError

DESCRIPTION = (
    "Render the outcomes of several reports side by side: one column per report (driver and "
    "its version or image, Kubernetes version, suite commit, run date), one row per "
    "requirement of their catalogs with the outcome and its reason, the verdicts, and each "
    "capability as declared and observed. Each report is first checked as `dra-conformance "
    "verify` checks it; a report that does not verify is refused (one line each, exit 2, "
    "nothing written). A report enters signed when a --key verifies its signature; an "
    "unsigned one (its files only agree with each other) enters only with --allow-unsigned, "
    "marked unsigned. Without --markdown or --html the Markdown goes to standard output."
)
NOTES_HELP = (
    "YAML judging failures: schema: 1, drivers: {DRIVER: {REQUIREMENT-ID: {kind: "
    "driver-bug|device-limitation|suite-bug, link: https://..., text: one line}}}; a failure "
    "or error without a note is shown as not judged"
)


def add_matrix_command(sub: argparse._SubParsersAction) -> None:
    matrix = sub.add_parser(
        "matrix",
        help="several verified reports side by side, as Markdown and HTML",
        description=DESCRIPTION,
    )
    matrix.add_argument(
        "report_dirs", nargs="+", type=Path, metavar="REPORT_DIR", help="reports/<run>"
    )
    matrix.add_argument("--markdown", type=Path, metavar="FILE", help="write the Markdown here")
    matrix.add_argument("--html", type=Path, metavar="FILE", help="write the HTML page here")
    matrix.add_argument("--notes", type=Path, metavar="NOTES.yaml", help=NOTES_HELP)
    matrix.add_argument(
        "--key",
        type=Path,
        action="append",
        default=[],
        metavar="PUB",
        help="a signer's public key (PEM); repeat for several signers",
    )
    matrix.add_argument(
        "--allow-unsigned",
        action="store_true",
        help="accept reports no --key verifies, when their files agree (marked unsigned)",
    )
    matrix.set_defaults(func=_matrix)


def _read_keys(paths: list[Path]) -> list[bytes]:
    keys = []
    for path in paths:
        try:
            keys.append(path.read_bytes())
        except OSError as exc:
            raise ConformanceError(
                f"--key {path}: cannot be read ({exc.strerror})", "give a public key's file"
            ) from None
    return keys


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConformanceError(
            f"{path}: cannot be written ({exc.strerror})", "give a writable file"
        ) from None


def _matrix(args: argparse.Namespace) -> int:
    from conformance.report.matrix import build_matrix, column_from_summary
    from conformance.report.matrix_html import render_html
    from conformance.report.matrix_intake import check_reports
    from conformance.report.matrix_markdown import render_markdown
    from conformance.report.matrix_notes import load_notes
    from conformance.report.paths import portable_path

    notes = load_notes(args.notes) if args.notes else {}
    accepted, refused = check_reports(args.report_dirs, _read_keys(args.key), args.allow_unsigned)
    for refusal in refused:
        print(f"dra-conformance: error: {refusal.line}", file=sys.stderr)
    if refused:
        return 2
    columns = [column_from_summary(a.summary, a.trust, a.scope, notes) for a in accepted]
    source = portable_path(args.notes) if args.notes else ""
    matrix = build_matrix(columns, [a.summary for a in accepted], source)
    if args.html:
        _write(args.html, render_html(matrix))
    if args.markdown:
        _write(args.markdown, render_markdown(matrix))
    if not (args.html or args.markdown):
        sys.stdout.write(render_markdown(matrix))
    signed = sum(1 for c in matrix.columns if c.trust == "signed")
    print(
        f"matrix: {len(columns)} report(s), {signed} signed, {len(matrix.rows)} requirements, "
        f"{len(matrix.unjudged())} failure(s) not judged",
        file=sys.stderr,
    )
    return 0
