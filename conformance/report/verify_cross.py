"""Do the report's other records of the run tell the same per-test story as junit.xml?

`verify` re-derives the verdict from junit.xml, so junit.xml and summary.json edited together
agree with each other. The run wrote two more records that such an edit leaves behind: the
Allure results (`allure-results/*-result.json`, one per test and attempt) and the evidence
archive (`evidence.tar.gz`: the summaries, junit.xml and allure-results as they were at the
end of the run). Each test's outcome in them must be junit.xml's.

Outcomes are compared as the summary types them (`TestOutcome`): each Allure result carries the
typed outcome as its `dra_outcome` label (conformance/report/allure.py). Without that label only
Allure's status is there, coarser: allure-pytest calls any exception but an assertion `broken`
(an error) even in the test body, where the suite calls it failed, and `skipped` is both
not-applicable and not-run, so failed and error are one class and both skips another.
"""

from __future__ import annotations

import io
import json
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from conformance.report.allure import ALLURE_RESULTS, KNOWN_PLATFORM_ISSUE, LABEL_OUTCOME
from conformance.report.allure_run import RESULT_SUFFIX
from conformance.report.evidence import EVIDENCE
from conformance.report.junit import JUNIT_XML
from conformance.report.junit_records import junit_id, records_from_junit
from conformance.report.outcomes import TestOutcome
from conformance.report.summary import SUMMARY_JSON

ALLURE_PLUGIN = "allure_pytest.plugin"  # in provenance.pytest_plugins when Allure recorded

_STATUS_NAMES = {"passed": "passed", "failed": "failed", "broken": "error", "skipped": "skipped"}
_CLASS_OF_STATUS = {"passed": "passed", "failed": "failed", "broken": "failed", "skipped": "skip"}
_CLASS_OF_OUTCOME = {
    TestOutcome.PASSED: "passed",
    TestOutcome.FAILED: "failed",
    TestOutcome.ERROR: "failed",
    KNOWN_PLATFORM_ISSUE: "failed",
    TestOutcome.NOT_APPLICABLE: "skip",
    TestOutcome.NOT_RUN: "skip",
}


@dataclass(frozen=True)
class AllureOutcome:
    status: str  # passed, failed, broken, skipped (or anything else a file says)
    label: str | None  # the typed outcome (`dra_outcome`), when the suite labelled the result

    def agrees_with(self, outcome: str) -> bool:
        if self.label is not None:
            return self.label == outcome
        return _CLASS_OF_OUTCOME.get(outcome) == _CLASS_OF_STATUS.get(self.status, self.status)

    def __str__(self) -> str:
        return self.label or _STATUS_NAMES.get(self.status, self.status)


@dataclass
class Evidence:
    """What the archive holds of the run, by path below its top folder."""

    summary: dict[str, Any] | None = None
    junit: ET.Element | None = None
    allure: list[dict[str, Any]] | None = None  # None: the archive has no allure-results/


def junit_outcomes(root: ET.Element) -> dict[str, str]:
    """Each test's typed outcome by its junit id ("classname::name"); a failed collection is
    left out (Allure records no result for it)."""
    found: dict[str, str] = {}
    for record in records_from_junit(root):
        if "collect" in record.phases:
            continue
        outcome = str(record.outcome)
        if record.outcome is TestOutcome.FAILED and record.known_issue:
            outcome = KNOWN_PLATFORM_ISSUE  # how the Allure label names such a failure
        found[record.nodeid] = outcome
    return found


def allure_outcomes(results: Iterable[Mapping[str, Any]]) -> dict[str, AllureOutcome]:
    """The latest result of each test by its junit id: a retried test has a result per attempt
    (same historyId), and only its last attempt is what junit.xml reports."""
    latest: dict[str, Mapping[str, Any]] = {}
    for result in results:
        key = str(result.get("historyId") or result.get("testCaseId") or result.get("uuid"))
        seen = latest.get(key)
        if seen is None or _when(result) >= _when(seen):
            latest[key] = result
    found: dict[str, AllureOutcome] = {}
    for result in latest.values():
        labels = {str(x.get("name")): str(x.get("value")) for x in result.get("labels") or []}
        found[allure_junit_id(result)] = AllureOutcome(
            str(result.get("status")), labels.get(LABEL_OUTCOME)
        )
    return found


def _when(result: Mapping[str, Any]) -> tuple[int, int]:
    return int(result.get("stop") or 0), int(result.get("start") or 0)


def allure_junit_id(result: Mapping[str, Any]) -> str:
    """allure-pytest's fullName is "package[.Class]#function" and its name pytest's item name
    (with the parameter id), as the suite sets no Allure title: junit.xml's
    "classname::name"."""
    owner, _, function = str(result.get("fullName", "")).partition("#")
    name = str(result.get("name") or function)
    return f"{owner}::{name if name.startswith(function) else function}"


def disagreements(
    junit: Mapping[str, str],
    other: Mapping[str, AllureOutcome | str],
    source: str,
    names: Mapping[str, str],
) -> list[str]:
    """One line per test whose outcome in `source` is not junit.xml's, or that only one has."""
    found = []
    for test_id in sorted(junit.keys() | other.keys()):
        ours, theirs = junit.get(test_id), other.get(test_id)
        if ours is not None and theirs is not None and _agree(ours, theirs):
            continue
        found.append(
            f"{names.get(test_id, test_id)}: junit.xml says {ours or 'nothing (no testcase)'}, "
            f"{source} says {theirs or 'nothing (no result)'}"
        )
    return found


def _agree(ours: str, theirs: AllureOutcome | str) -> bool:
    return theirs.agrees_with(ours) if isinstance(theirs, AllureOutcome) else ours == theirs


def read_allure_dir(directory: Path) -> tuple[list[dict[str, Any]], list[str]]:
    results, problems = [], []
    for path in sorted(directory.glob(f"*{RESULT_SUFFIX}")):
        try:
            results.append(json.loads(path.read_bytes()))
        except (OSError, ValueError) as exc:
            problems.append(f"{ALLURE_RESULTS}/{path.name}: not a readable Allure result ({exc})")
    return results, problems


def read_evidence(path: Path) -> Evidence:
    """The archive's summary.json, junit.xml and Allure results (diagnostics are not read).
    Raises ValueError when it is not a readable archive."""
    evidence = Evidence()
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                parts = PurePosixPath(member.name).parts[1:]  # below `<run dir name>/`
                if not member.isfile() or not parts:
                    continue
                name = "/".join(parts)
                if name not in (SUMMARY_JSON, JUNIT_XML) and not (
                    parts[0] == ALLURE_RESULTS and name.endswith(RESULT_SUFFIX)
                ):
                    continue
                data = tar.extractfile(member).read()  # type: ignore[union-attr]
                _add_member(evidence, name, data)
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise ValueError(f"not a readable gzip tar archive ({exc})") from None
    return evidence


def _add_member(evidence: Evidence, name: str, data: bytes) -> None:
    try:
        if name == SUMMARY_JSON:
            evidence.summary = json.loads(data)
        elif name == JUNIT_XML:
            evidence.junit = ET.parse(io.BytesIO(data)).getroot()
        else:
            evidence.allure = evidence.allure or []
            evidence.allure.append(json.loads(data))
    except (ValueError, ET.ParseError) as exc:
        raise ValueError(f"its {name} cannot be read ({exc})") from None


def allure_was_off(summary: Mapping[str, Any]) -> bool:
    """The run recorded no Allure results (allure-pytest not loaded): the summary lists no
    allure-results and, where it records the loaded plugins, allure-pytest is not among them."""
    listed = (summary.get("artifacts") or {}).get("allure_results")
    plugins = (summary.get("provenance") or {}).get("pytest_plugins")
    return not listed and not (isinstance(plugins, list) and ALLURE_PLUGIN in plugins)


def _test_names(summary: Mapping[str, Any]) -> dict[str, str]:
    """junit id -> pytest node id (`scenarios/x.py::test_y`), as the summary lists the tests."""
    nodeids = (str(t.get("nodeid")) for t in summary.get("tests") or [] if t.get("nodeid"))
    return {junit_id(nodeid): nodeid for nodeid in nodeids}


def cross_check(report_dir: Path, summary: Mapping[str, Any], junit: ET.Element) -> list[str]:
    """Why the Allure results and the evidence archive do not tell junit.xml's story (empty:
    they do)."""
    report_dir = Path(report_dir)
    outcomes, names = junit_outcomes(junit), _test_names(summary)
    problems: list[str] = []
    evidence: Evidence | None = None
    if not (report_dir / EVIDENCE).is_file():
        problems.append(f"{EVIDENCE}: missing (every finished run writes it)")
    else:
        try:
            evidence = read_evidence(report_dir / EVIDENCE)
        except ValueError as exc:
            problems.append(f"{EVIDENCE}: {exc}")
    problems += _allure_problems(report_dir, summary, outcomes, names, evidence)
    if evidence is not None:
        problems += _evidence_problems(evidence, summary, outcomes, names)
    return problems


def _allure_problems(
    report_dir: Path,
    summary: Mapping[str, Any],
    outcomes: Mapping[str, str],
    names: Mapping[str, str],
    evidence: Evidence | None,
) -> list[str]:
    listed = (summary.get("artifacts") or {}).get("allure_results")
    # an --alluredir outside the run directory is published only inside the archive
    inside = listed is None or not Path(str(listed)).is_absolute()
    directory = report_dir / (str(listed) if inside and listed else ALLURE_RESULTS)
    if not directory.is_dir():
        in_archive = evidence is not None and evidence.allure is not None
        if allure_was_off(summary) or (not inside and in_archive):
            return []
        return [
            f"{ALLURE_RESULTS}/: missing, but the run recorded Allure results (summary.json "
            "lists them or allure-pytest was loaded): the per-test outcomes cannot be checked"
        ]
    results, problems = read_allure_dir(directory)
    return problems + _compare_allure(results, outcomes, ALLURE_RESULTS, names)


def _compare_allure(
    results: list[dict[str, Any]],
    outcomes: Mapping[str, str],
    source: str,
    names: Mapping[str, str],
) -> list[str]:
    if not results and outcomes:
        return [f"{source}: no test result, junit.xml has {len(outcomes)} test(s)"]
    return disagreements(outcomes, allure_outcomes(results), source, names)


def _evidence_problems(
    evidence: Evidence,
    summary: Mapping[str, Any],
    outcomes: Mapping[str, str],
    names: Mapping[str, str],
) -> list[str]:
    where = f"{EVIDENCE}'s"
    problems = []
    if evidence.junit is None:
        problems.append(f"{EVIDENCE} holds no {JUNIT_XML}")
    else:
        archived = junit_outcomes(evidence.junit)
        problems += disagreements(outcomes, archived, f"{where} {JUNIT_XML}", names)
    if evidence.summary is None:
        problems.append(f"{EVIDENCE} holds no {SUMMARY_JSON}")
    elif evidence.summary.get("verdict") != summary.get("verdict"):
        problems.append(
            f"{where} {SUMMARY_JSON} says {evidence.summary.get('verdict')}, "
            f"{SUMMARY_JSON} says {summary.get('verdict')}"
        )
    if evidence.allure is not None:
        problems += _compare_allure(evidence.allure, outcomes, f"{where} {ALLURE_RESULTS}", names)
    elif not allure_was_off(summary):
        problems.append(f"{EVIDENCE} holds no {ALLURE_RESULTS}/ (the run recorded them)")
    return problems
