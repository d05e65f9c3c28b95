"""Command-line options of the report, and where the run directory is.

The conformance plugin owns the `--dra-*` options. `add_report_options` adds only those that no
other plugin registered yet, so the report also works on its own
(`-p conformance.report.standalone`) and in either registration order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.report.facts import WORKERINPUT_RUN_DIR, get_run_id

HTML_MODES = ("auto", "always", "never")
CHART_MODES = ("auto", "never")


def option(config: pytest.Config, name: str, default: Any = None) -> Any:
    """`config.getoption(name)`, or `default` when no plugin defined the option."""
    try:
        value = config.getoption(name, default)
    except (ValueError, AttributeError):
        return default
    return default if value is None else value


def add_report_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("dra-conformance", "DRA conformance")
    _add(
        parser,
        group,
        "--dra-report-dir",
        dest="dra_report_dir",
        default=None,
        metavar="DIR",
        help="run directory for summary.json, junit.xml, allure-results/ ... "
        "(default: reports/<run-id>)",
    )
    _add(
        parser,
        group,
        "--dra-html-report",
        dest="dra_html_report",
        default="auto",
        choices=HTML_MODES,
        help="generate the Allure HTML report at the end of the run: auto (when node and the "
        "allure npm package are installed), always (fail the report step if not), never",
    )
    _add(
        parser,
        group,
        "--dra-charts",
        dest="dra_charts",
        default="auto",
        choices=CHART_MODES,
        help="draw the run's SVG charts (driver latency, timeline) beside summary.md and in "
        "Allure: auto, or never (a short run that only wants its verdict: drawing costs a few "
        "seconds of CPU)",
    )
    _add(
        parser,
        group,
        "--dra-verdict-scope",
        dest="dra_verdict_scope",
        default=None,
        metavar="SUITE|ID[,...]",
        help="judge only these suites or requirement IDs (e.g. core, DRA-DEL-006): other MUST "
        "requirements are reported but do not decide the verdict (default: the "
        "--dra-requirement IDs if given, else every suite; a MUST requirement without a "
        "result is then a failure)",
    )


def _add(parser: pytest.Parser, group: Any, flag: str, **kwargs: Any) -> None:
    if flag in _known_flags(parser):  # another plugin already defines it: use theirs
        return
    group.addoption(flag, **kwargs)


def _known_flags(parser: pytest.Parser) -> set[str]:
    groups = [*getattr(parser, "_groups", ()), getattr(parser, "_anonymous", None)]
    return {
        name
        for group in groups
        if group is not None
        for opt in getattr(group, "options", ())
        for name in opt.names()
    }


def resolve_run_dir(config: pytest.Config) -> Path:
    """The run directory (absolute), identical on the xdist controller and its workers."""
    from_controller = getattr(config, "workerinput", {}).get(WORKERINPUT_RUN_DIR)
    if from_controller:
        return Path(from_controller)
    given = option(config, "dra_report_dir")
    base = Path(config.invocation_params.dir)
    if given:
        path = Path(given)
        return path if path.is_absolute() else base / path
    return base / "reports" / get_run_id(config)


def verdict_scope(config: pytest.Config) -> list[str] | None:
    """The suites or requirement IDs the verdict covers (`--dra-verdict-scope`, else the
    `--dra-requirement` selection, else the upgrade suite in a rehearsal), or None for every
    suite."""
    raw = option(config, "dra_verdict_scope") or option(config, "dra_requirements")
    if not raw and option(config, "dra_upgrade_to"):
        from conformance.model.requirements import REHEARSAL_SUITES

        return list(REHEARSAL_SUITES)  # a rehearsal is judged on the upgrade suite
    if not raw:
        return None
    values = raw if isinstance(raw, list | tuple) else str(raw).split(",")
    return sorted({v.strip() for v in values if str(v).strip()})
