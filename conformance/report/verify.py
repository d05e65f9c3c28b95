"""`dra-conformance verify REPORT_DIR [--key PUB]`: is a published report what the suite says?

The checks, in order; the first that fails is what `verify` prints:

0. With a public key, the signature (conformance/report/signing.py): the DSSE envelope is
   signed by that key, and every file of the directory is a signed subject with its sha256.
   Only a signed report can be `verified`; an unsigned one whose files agree is `unsigned`:
   the checks below show it consistent, not that the suite made it.
1. The files agree: junit.xml carries summary.json's sha256 (written at the end of the run),
   the per-test outcomes re-derived from junit.xml's testcases and their properties give, through
   the run's own code (`conformance.report.summary.build_summary`, hence `verdict.py`) and the
   installed suite's own catalog and known issues (never the report's rows, so a dropped row
   is a requirement with no test), the requirement statuses, test outcomes, counts and verdict
   summary.json states, and summary.md is what summary.json renders to.
2. The run used the suite: summary.json does not mark it "modified suite — not a certification".
3. The suite is this suite: the report's version and the digests of its catalog, known-issue list
   and scenario tree equal the reference (`provenance.suite_digests`: the committed suite in a
   git checkout, else the installed package).
4. The other records agree: each test's outcome in allure-results/ and in evidence.tar.gz is
   junit.xml's (conformance/report/verify_cross.py).

Re-deriving needs no cluster and no pytest: a testcase's `requirement` property is the
requirement the harness stamped (only on the suite's own tests), `dra_outcome` / `dra_remedy`
type a skip or a harness error, `dra_known_issue` a failure with a known platform issue, and
`dra_claim` what a test's own code tried to claim.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from conformance.errors import ConformanceError
from conformance.model.known_issues import KnownIssue, load_known_issues
from conformance.model.requirements import REHEARSAL_SUITES, load_catalog
from conformance.report.catalog import (
    DEFAULT_CATALOG,
    KNOWN_ISSUES_FILE,
    RequirementInfo,
    catalog_from,
)
from conformance.report.facts import RunFacts
from conformance.report.junit import JUNIT_XML
from conformance.report.junit_records import junit_id, junit_suite_properties, records_from_junit
from conformance.report.markdown import SUMMARY_MD, render_markdown
from conformance.report.outcomes import (
    TestRecord,
)
from conformance.report.provenance import (
    MODIFIED_MARK,
    SUMMARY_DIGEST_PROPERTY,
    SuiteDigests,
    modified_text,
    sha256_of,
    suite_digests,
)
from conformance.report.signing import ATTESTATION_FILE, check_signature
from conformance.report.summary import SUMMARY_JSON, RunInfo, build_summary
from conformance.report.verify_cross import cross_check

MAX_SHOWN = 4  # differences named on the one line


class ReportInputError(ConformanceError):
    """REPORT_DIR is not a report that can be checked (missing or unreadable files)."""


VERIFIED_EXIT, NOT_VERIFIED_EXIT, UNSIGNED_EXIT = 0, 1, 3


@dataclass(frozen=True)
class Verification:
    verified: bool
    line: str  # what `dra-conformance verify` prints
    exit_code: int = NOT_VERIFIED_EXIT


@dataclass(frozen=True)
class Report:
    summary: dict[str, Any]
    summary_sha256: str
    junit: ET.Element
    markdown: str | None


def load_report(report_dir: Path) -> Report:
    report_dir = Path(report_dir)
    if not report_dir.is_dir():
        raise ReportInputError(
            f"{report_dir}: no such report directory; give a run's directory (reports/<run>)"
        )
    summary_path, junit_path = report_dir / SUMMARY_JSON, report_dir / JUNIT_XML
    for path in (summary_path, junit_path):
        if not path.is_file():
            raise ReportInputError(
                f"{path}: missing; a report directory holds {SUMMARY_JSON} and {JUNIT_XML}"
            )
    data = summary_path.read_bytes()
    try:
        summary = json.loads(data)
    except ValueError as exc:
        raise ReportInputError(f"{summary_path}: not JSON ({exc})") from None
    if not isinstance(summary, dict) or "verdict" not in summary:
        raise ReportInputError(f"{summary_path}: not a dra-conformance summary (no verdict)")
    try:
        junit = ET.parse(junit_path).getroot()
    except ET.ParseError as exc:
        raise ReportInputError(f"{junit_path}: not well-formed XML ({exc})") from None
    markdown_path = report_dir / SUMMARY_MD
    markdown = markdown_path.read_text(encoding="utf-8") if markdown_path.is_file() else None
    return Report(summary, sha256_of(data), junit, markdown)


def suite_catalog(
    summary: Mapping[str, Any],
) -> tuple[dict[str, RequirementInfo], tuple[KnownIssue, ...]]:
    """The installed suite's own catalog and known issues (never the report's copy): a report
    cannot drop a requirement by leaving its row out. A rehearsal's catalog holds the upgrade
    suites as well; a report naming one of their requirements is judged on it."""
    catalog = load_catalog(DEFAULT_CATALOG)
    named = {r.get("id") for r in summary.get("requirements") or []}
    rehearsal = any(r.id in named for r in catalog.requirements if r.suite in REHEARSAL_SUITES)
    catalog = catalog.for_run(rehearsal=rehearsal)
    issues = load_known_issues(
        DEFAULT_CATALOG.with_name(KNOWN_ISSUES_FILE), [r.id for r in catalog.requirements]
    )
    return catalog_from(catalog.requirements), issues


def declared_capabilities(summary: Mapping[str, Any]) -> tuple[str, ...]:
    """What the certified profile promised: from the profile embedded in the report (the one
    the run used), else the driver block's list. Leaving a capability out of the list only
    would not drop its requirements from the verdict."""
    driver = summary.get("driver") or {}
    try:
        profile = yaml.safe_load(driver.get("profile_text") or "") or {}
    except yaml.YAMLError:
        profile = {}
    found = profile.get("capabilities") if isinstance(profile, dict) else None
    if not isinstance(found, list):
        found = driver.get("capabilities") or []
    return tuple(sorted(str(c) for c in found))


def recompute(summary: Mapping[str, Any], records: list[TestRecord]) -> dict[str, Any]:
    """The summary the run's own code builds from these records and the suite's catalog."""
    catalog, issues = suite_catalog(summary)
    run = summary.get("run") or {}
    cluster = summary.get("cluster") or {}
    return build_summary(
        # an interrupted run's reason is summary.json's no_verdict_reason, passed below
        run=RunInfo(id=str(run.get("id", "")), started=0.0, finished=0.0),
        facts=RunFacts(
            kubernetes_version=cluster.get("kubernetes_version") or "",
            capabilities=declared_capabilities(summary),
        ),
        catalog=catalog,
        records=records,
        catalog_error=None if catalog else "the suite's catalog lists no requirement",
        verdict_scope=summary.get("verdict_scope"),
        known_issues=issues,
        no_verdict_reason=str(summary.get("no_verdict_reason") or ""),
        no_verdict_detail=str(summary.get("no_verdict_detail") or ""),
        provenance={
            "modified": bool(summary.get("modified")),
            "modified_reasons": list(summary.get("modified_reasons") or []),
        },
    )


def differences(summary: Mapping[str, Any], derived: Mapping[str, Any]) -> list[str]:
    """What junit.xml (re-derived) says otherwise than summary.json."""
    found: list[str] = []
    stated = {r["id"]: r.get("status") for r in summary.get("requirements") or []}
    shown = {r["id"]: r.get("status") for r in derived.get("requirements") or []}
    for req_id in list(dict.fromkeys([*stated, *shown])):
        ours, theirs = shown.get(req_id), stated.get(req_id)
        if ours != theirs:
            found.append(
                f"junit.xml says {req_id} {ours or 'has no test'}, "
                f"summary.json says {theirs or 'nothing of it'}"
            )
    stated_tests = (summary.get("counts") or {}).get("tests") or {}
    for key, value in ((derived.get("counts") or {}).get("tests") or {}).items():
        if stated_tests.get(key) != value:
            found.append(
                f"junit.xml has {value} {key.replace('_', '-')} test(s), "
                f"summary.json {stated_tests.get(key)}"
            )
    stated_outcomes = {
        junit_id(str(t.get("nodeid"))): t.get("outcome") for t in summary.get("tests") or []
    }
    derived_outcomes = {t.get("nodeid"): t.get("outcome") for t in derived.get("tests") or []}
    for nodeid in sorted(stated_outcomes.keys() | derived_outcomes.keys(), key=str):
        if stated_outcomes.get(nodeid) != derived_outcomes.get(nodeid):
            found.append(
                f"junit.xml says test {nodeid} {derived_outcomes.get(nodeid) or 'did not run'}, "
                f"summary.json says {stated_outcomes.get(nodeid) or 'nothing of it'}"
            )
    for key in ("verdict", "exit_code", "verdict_text", "unmodified_verdict"):
        if derived.get(key) != summary.get(key):
            found.append(
                f"junit.xml gives {key} {derived.get(key)}, summary.json says {summary.get(key)}"
            )
    return found


def _short(digest: str | None) -> str:
    return f"{digest[:19]}…" if digest else "none"


def provenance_differences(summary: Mapping[str, Any], reference: SuiteDigests) -> list[str]:
    prov = summary.get("provenance") or {}
    version = prov.get("suite_version")
    if version != reference.version:
        return [
            f"made with suite {version}, {reference.source} is {reference.version} "
            f"(verify it with dra-conformance {version})"
        ]
    found = []
    for what, key, ours in (
        ("requirements catalog", "catalog", reference.catalog),
        ("known-issue list", "known_issues", reference.known_issues),
        ("scenario tree", "scenarios", reference.scenarios),
    ):
        theirs = (prov.get(key) or {}).get("sha256")
        if theirs != ours:
            found.append(
                f"the {what} it ran ({_short(theirs)}) is not {reference.source}'s ({_short(ours)})"
            )
    return found


_NARROWING = ("-k", "-m", "--deselect", "--dra-requirement", "--dra-verdict-scope", "--lf", "-x")


def _narrowed_by(pytest_args: list[str]) -> list[str]:
    """What in the recorded pytest arguments narrowed the run's selection."""
    found = []
    for arg in pytest_args:
        name = arg.split("=", 1)[0]
        if name in _NARROWING or any(arg.startswith(o) for o in ("-k", "-m") if len(arg) > 2):
            found.append(name[:2] if name[:2] in ("-k", "-m") else name)
        elif re.search(r"(^|/)scenarios/[^/]", arg) and not arg.startswith("-"):
            found.append("a path")
    return list(dict.fromkeys(found))


def selection_scope(summary: Mapping[str, Any]) -> str:
    """What the run selected: whole suite, partial, or a narrowed selection."""
    partial = summary.get("partial")
    if isinstance(partial, Mapping) and partial:
        return f"partial ({partial.get('selected')} of {partial.get('total')} MUST selected)"
    if summary.get("verdict_scope"):
        return f"partial ({', '.join(summary['verdict_scope'])})"
    narrowed = _narrowed_by([str(a) for a in (summary.get("run") or {}).get("pytest_args") or []])
    if narrowed:
        return f"narrowed selection ({', '.join(narrowed)})"
    return "whole suite"


def _not_verified(problems: list[str]) -> Verification:
    shown = problems[:MAX_SHOWN]
    more = f"; and {len(problems) - MAX_SHOWN} more" if len(problems) > MAX_SHOWN else ""
    return Verification(False, "not verified: " + "; ".join(shown) + more, NOT_VERIFIED_EXIT)


def _consistency_problems(report: Report) -> list[str]:
    summary = report.summary
    recorded = junit_suite_properties(report.junit).get(SUMMARY_DIGEST_PROPERTY)
    problems: list[str] = []
    if recorded is None:
        problems.append(
            "junit.xml carries no digest of summary.json (not a dra-conformance report, or "
            "one made before `verify` existed)"
        )
    elif recorded != report.summary_sha256:
        problems.append(
            f"summary.json was changed after the run (junit.xml records {_short(recorded)}, "
            f"the file is {_short(report.summary_sha256)})"
        )
    problems += differences(summary, recompute(summary, records_from_junit(report.junit)))
    if report.markdown is not None and report.markdown != render_markdown(summary):
        problems.append("summary.md is not what summary.json says (changed after the run)")
    return problems


def verify_report(
    report_dir: Path,
    reference: SuiteDigests | None = None,
    public_key: bytes | None = None,
) -> Verification:
    """Check a report directory; `reference` defaults to this suite (`suite_digests()`).

    With `public_key`, the report's signature and every signed file are checked first, and
    only a signed report that passes everything is `verified`; without one, a report whose
    files agree is `unsigned` (exit 3): consistent, but anyone could have written it."""
    report = load_report(report_dir)
    summary = report.summary
    signature = None if public_key is None else check_signature(Path(report_dir), public_key)
    if signature is not None and signature.problems:
        return _not_verified(signature.problems)
    problems = _consistency_problems(report)
    if problems:
        return _not_verified(problems)
    if not summary.get("provenance"):
        return _not_verified(["summary.json carries no provenance (made before `verify` existed)"])
    if summary.get("modified"):
        return _not_verified([modified_text(summary)])
    reference = reference or suite_digests()
    problems = provenance_differences(summary, reference)
    if problems:
        return _not_verified([f"{MODIFIED_MARK}: {'; '.join(problems)}"])

    problems = cross_check(Path(report_dir), summary, report.junit)
    if problems:
        return _not_verified(problems)
    prov = summary["provenance"]
    verdict = summary.get("verdict_text") or summary.get("verdict")
    what = (
        f"{verdict}, {selection_scope(summary)}, unmodified (suite {prov.get('suite_version')}"
        f", catalog {_short((prov.get('catalog') or {}).get('sha256'))})"
    )
    if signature is None:
        signed = (Path(report_dir) / ATTESTATION_FILE).is_file()
        hint = "; it carries a signature: check it with --key PUB.pem" if signed else ""
        return Verification(
            False,
            f"unsigned: the files agree with each other ({what}); re-run the suite or ask for a "
            f"signed report{hint}",
            UNSIGNED_EXIT,
        )
    return Verification(
        True,
        f"verified: {what}, signed ({len(signature.statement['subject'])} files)",
        VERIFIED_EXIT,
    )
