"""A run's verdict is this run's or none: the report directory is fenced as soon as a run starts,
and a run that cannot judge the driver says so (NO-VERDICT, exit 2) instead of leaving an older
run's summary standing.

- `fence`: before any cluster work, the previous run's summary.json/summary.md are replaced by
  a NO-VERDICT summary carrying this run's id ("has not finished"), and its other outputs
  (junit.xml, the evidence archive, the Allure results and HTML report, the charts, the
  signature) are removed;
- `no_verdict_on_error`: a run refused before pytest starts (bad profile, catalog or
  arguments) leaves an existing report directory saying so, never with its older verdict;
- `own_summary`: a summary is read back only when its run id is this run's;
- `set_no_verdict`: the plugin records why a run has no verdict (its set-up failed), for the
  report written at session finish.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.errors import ConformanceError
from conformance.report.allure import ALLURE_RESULTS
from conformance.report.allure_html import ALLURE_REPORT
from conformance.report.charts import CHARTS_DIR
from conformance.report.evidence import EVIDENCE
from conformance.report.junit import JUNIT_XML
from conformance.report.markdown import SUMMARY_MD, write_markdown
from conformance.report.signing import ATTESTATION_FILE
from conformance.report.summary import SUMMARY_JSON, RunInfo, build_summary, write_summary

RUNNING = "the run has not finished: it is still running, or it stopped before it could judge"
SET_UP = "the run could not be set up"
INTERNAL_ERROR = "pytest stopped with an internal error"
STOPPED = "pytest stopped before the run could judge (pytest exit code {code})"


@dataclass(frozen=True)
class NoVerdict:
    reason: str  # one of the sentences above
    detail: str = ""  # the error and its remedy, on one line


NO_VERDICT_KEY = pytest.StashKey[NoVerdict]()


def set_no_verdict(config: pytest.Config, reason: str, detail: str = "") -> None:
    config.stash[NO_VERDICT_KEY] = NoVerdict(reason, detail)


def no_verdict_of(config: pytest.Config) -> NoVerdict | None:
    return config.stash.get(NO_VERDICT_KEY, None)


def one_line(problem: str, remedy: str = "") -> str:
    """`what; remedy` on one line, whatever line breaks the parts carry."""
    parts = [" ".join(p.split()) for p in (problem, remedy) if p and p.strip()]
    return "; ".join(parts)


def no_verdict_summary(
    run_id: str, report_dir: Path, reason: str, detail: str = "", started: float | None = None
) -> dict[str, Any]:
    """A schema-complete summary.json for a run that judged nothing."""
    now = time.time()
    run = RunInfo(id=run_id, started=started or now, finished=now, report_dir=str(report_dir))
    return build_summary(
        run=run,
        facts=None,
        catalog={},
        records=[],
        no_verdict_reason=reason,
        no_verdict_detail=detail,
    )


def write_no_verdict(
    report_dir: Path, run_id: str, reason: str, detail: str = "", started: float | None = None
) -> dict[str, Any]:
    summary = no_verdict_summary(run_id, report_dir, reason, detail, started)
    summary["artifacts"] = {"summary_json": SUMMARY_JSON, "summary_md": SUMMARY_MD}
    write_summary(report_dir, summary)
    write_markdown(report_dir, summary)
    return summary


def fence(report_dir: Path, run_id: str) -> None:
    """Replace whatever verdict the directory holds by this run's "no verdict yet"."""
    report_dir = Path(report_dir)
    if (own_summary(report_dir, run_id) or {}).get("no_verdict_reason") == RUNNING:
        return  # fenced already (the command line did it before pytest started)
    report_dir.mkdir(parents=True, exist_ok=True)
    for name in (JUNIT_XML, EVIDENCE, ATTESTATION_FILE):
        (report_dir / name).unlink(missing_ok=True)
    for name in (ALLURE_REPORT, ALLURE_RESULTS, CHARTS_DIR):
        shutil.rmtree(report_dir / name, ignore_errors=True)
    write_no_verdict(report_dir, run_id, RUNNING)


@contextmanager
def no_verdict_on_error(report_dir: Path, run_id: str) -> Iterator[None]:
    """Around the checks a run makes before pytest starts: when one refuses the run, a report
    directory that already exists (a CI job's fixed --report-dir) is fenced and says why; a
    new one is not created, so a refused run leaves nothing behind."""
    try:
        yield
    except ConformanceError as error:
        if Path(report_dir).is_dir():
            fence(report_dir, run_id)
            write_no_verdict(report_dir, run_id, SET_UP, one_line(error.problem, error.remedy))
        raise


def own_summary(report_dir: Path, run_id: str) -> dict[str, Any] | None:
    """The directory's summary.json if this run wrote it, else None (never another run's)."""
    path = Path(report_dir) / SUMMARY_JSON
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict):
        return None
    run = document.get("run")
    return document if isinstance(run, dict) and run.get("id") == run_id else None
