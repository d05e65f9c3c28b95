"""The run's charts and its run-level Allure attachments, written at the end of the run: neither
may stop the report, so a failure is a warning of the run's end, never an exception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.report.allure_run import write_run_attachments
from conformance.report.charts import write_charts


def draw_charts(
    run_dir: Path, summary: dict[str, Any], *, skip: bool, problems: list[str]
) -> list[Path]:
    """The charts beside summary.md, listed in summary["artifacts"]["charts"]; none when
    `skip` (an interrupted run, which must end now, or one run with `--dra-charts never`)."""
    summary["artifacts"]["charts"] = []
    if skip:
        return []
    try:
        charts = write_charts(run_dir, summary)
    except Exception as exc:  # noqa: BLE001 - matplotlib's errors are many; none stops a report
        problems.append(f"charts not drawn: {type(exc).__name__}: {exc}")
        return []
    summary["artifacts"]["charts"] = [str(p.relative_to(run_dir)) for p in charts]
    return charts


def attach_run_figures(
    results_dir: Path | None, summary: dict[str, Any], charts: list[Path], problems: list[str]
) -> None:
    if results_dir is None:
        return
    try:
        write_run_attachments(results_dir, summary, charts)
    except (OSError, ValueError, TypeError) as exc:
        problems.append(f"Allure run attachments not written: {exc}")
