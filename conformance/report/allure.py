"""Allure results: where they go, the labels each test gets, environment and categories files.

Labels per test (from the requirement the harness says a suite test proves,
`conformance.report.outcomes.suite_requirement`), so that the report's tree reads as a
conformance report, not as a file tree:
parentSuite = catalog suite, suite = "<ID>: <statement>" (the HTML report groups by these two),
epic / feature / story = suite / ID / statement (the behaviours view), severity from the level
(MUST critical, SHOULD normal, MAY minor), tag = level, `driver` / `kubernetes_version` from the
run facts, and `dra_outcome` = the typed outcome (passed, failed, error, not-applicable,
not-run, known-platform-issue: a failure on a version with a known upstream bug for it, whose
message starts with the issue's note and which links the issue). Allure has one "skipped"
status for both kinds of skip, so a skipped test's message is rewritten to start with the typed
outcome's prefix, which `CATEGORIES` sorts by.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from conformance.model.known_issues import NOTE_PREFIX
from conformance.model.outcome import MESSAGE_PREFIX, PROP_OUTCOME, SkipKind
from conformance.report.catalog import RequirementInfo, catalog_for
from conformance.report.facts import RunFacts, get_run_facts
from conformance.report.markdown import image_reference
from conformance.report.node_facts import build_properties
from conformance.report.outcomes import TestOutcome, TestRecord, report_reason, suite_requirement
from conformance.report.paths import portable
from conformance.report.platform_issues import known_issue_link
from conformance.report.provenance import modified_text

ALLURE_RESULTS = "allure-results"
LABEL_OUTCOME = PROP_OUTCOME  # the typed outcome's label, named like the user property
OUTCOME_PLUGIN = "dra-allure-outcomes"
ENVIRONMENT_FILE = "environment.properties"
CATEGORIES_FILE = "categories.json"

SEVERITY_BY_LEVEL = {"MUST": "critical", "SHOULD": "normal", "MAY": "minor"}
_LEVEL_RANK = {"MUST": 0, "SHOULD": 1, "MAY": 2}

# First match wins (Allure 2 and Allure 3 alike). Regexes must be valid in Java (matched against
# the whole message) and JavaScript (searched), hence `^...[\s\S]*` rather than inline flags.
# Skipped tests' messages start with MESSAGE_PREFIX of their typed outcome (`AllureOutcomes`).
CATEGORIES: list[dict[str, Any]] = [
    {
        "name": "Known platform issues",
        "description": "Failed on a Kubernetes version with a known upstream bug for the "
        "requirement (scenarios/known_issues.yaml; the link is on the result): not met, so "
        "never CONFORMANT, but not blamed on the driver.",
        "matchedStatuses": ["failed", "broken"],
        "messageRegex": "^" + NOTE_PREFIX + r" [\s\S]*",
    },
    {
        "name": "Not applicable",
        "description": "The driver lacks the optional feature, or the cluster the behaviour: "
        "the requirement does not count against the verdict.",
        "matchedStatuses": ["skipped"],
        "messageRegex": "^" + MESSAGE_PREFIX[SkipKind.NOT_APPLICABLE] + r"[\s\S]*",
    },
    {
        "name": "Not run",
        "description": "The requirement applies but did not run here (the message says what "
        "would make it run): a MUST not run leaves the verdict INCOMPLETE.",
        "matchedStatuses": ["skipped"],
        "messageRegex": "^" + MESSAGE_PREFIX[SkipKind.NOT_RUN] + r"[\s\S]*",
    },
    {
        "name": "Timeouts",
        "description": "A wait ran out: the message says what was awaited and the last state.",
        "matchedStatuses": ["failed", "broken"],
        "messageRegex": r"[\s\S]*([Aa]waited|[Tt]imed out|[Tt]imeout)[\s\S]*",
    },
    {
        "name": "Product defects",
        "description": "An assertion on the driver's or cluster's behaviour failed.",
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Test defects",
        "description": "The test itself errored (setup, teardown or an unexpected exception).",
        "matchedStatuses": ["broken"],
    },
]


def allure_enabled(config: pytest.Config) -> bool:
    return config.pluginmanager.has_plugin("allure_pytest") and hasattr(
        config.option, "allure_report_dir"
    )


def ensure_allure_results_dir(config: pytest.Config, run_dir: Path, *, clean: bool) -> Path | None:
    """Point `--alluredir` at `<run dir>/allure-results` unless given; return the results dir.

    `clean` empties a directory we chose (only the controller passes True, before workers start:
    allure's own --clean-alluredir races under xdist).
    """
    if not allure_enabled(config):
        return None
    if config.option.allure_report_dir:
        return Path(config.option.allure_report_dir).resolve()
    results = Path(run_dir) / ALLURE_RESULTS
    if clean and results.is_dir() and not getattr(config.option, "collectonly", False):
        shutil.rmtree(results)
    config.option.allure_report_dir = str(results)
    return results


def ensure_allure_listener(config: pytest.Config) -> None:
    """At session start, in every process: make sure allure-pytest records, and type outcomes.

    allure-pytest starts its listener only if `--alluredir` was set when it configured; xdist
    workers parse their own command line, so on them (and whenever the report set the dir
    later) the listener is started here.
    """
    if not allure_enabled(config) or not config.option.allure_report_dir:
        return
    if config.pluginmanager.get_plugin("allure_listener") is None:
        _start_allure_listener(config, Path(config.option.allure_report_dir).resolve())
    if not config.pluginmanager.has_plugin(OUTCOME_PLUGIN):
        config.pluginmanager.register(AllureOutcomes(), OUTCOME_PLUGIN)


def _start_allure_listener(config: pytest.Config, results_dir: Path) -> None:
    import allure_commons
    from allure_commons.logger import AllureFileLogger
    from allure_pytest.listener import AllureListener
    from allure_pytest.plugin import cleanup_factory

    listener = AllureListener(config)
    config.pluginmanager.register(listener, "allure_listener")
    allure_commons.plugin_manager.register(listener)
    config.add_cleanup(cleanup_factory(listener))
    file_logger = AllureFileLogger(str(results_dir), False)
    allure_commons.plugin_manager.register(file_logger)
    config.add_cleanup(cleanup_factory(file_logger))


_RECORD_KEY = pytest.StashKey[TestRecord]()  # the test's phases, typed as the summary types them
_LABELLED_KEY = pytest.StashKey[bool]()
_KNOWN_ISSUE_KEY = pytest.StashKey[str]()  # the link of the known issue the call failed with
KNOWN_PLATFORM_ISSUE = "known-platform-issue"  # the dra_outcome label of such a test


class AllureOutcomes:
    """Gives each Allure result its typed outcome: the `dra_outcome` label, and for a skip a
    message that starts with the outcome's prefix (Allure's categories tell the two skips apart
    by it). Runs where the test runs, so on xdist workers too. The outcome is the summary's
    (`TestRecord`), from the typed report properties the collector stamps."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: after allure-pytest's wrapper
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if report.when == "setup" and not item.stash.get(_LABELLED_KEY, False):
            # a setup hook that ran before the collector's (and skipped or failed) left the
            # result without its requirement labels
            apply_dynamic_labels(item, catalog_for(item.config)[0], get_run_facts(item.config))
        record = item.stash.setdefault(_RECORD_KEY, TestRecord(nodeid=item.nodeid))
        record.add_report(report)
        if report.skipped:
            kind = (
                SkipKind.NOT_APPLICABLE
                if record.outcome is TestOutcome.NOT_APPLICABLE
                else SkipKind.NOT_RUN
            )
            _set_allure_message(item.config, skip_message(kind, call, report))
        link = known_issue_link(report) if report.when == "call" and report.failed else None
        if link is not None:  # the collector prefixed the failure with the issue's note
            import allure

            _set_allure_message(item.config, report_reason(report))
            allure.dynamic.link(link, name="known platform issue")
            item.stash[_KNOWN_ISSUE_KEY] = link
        if report.when == "teardown":
            import allure

            outcome = str(record.outcome)
            if outcome == TestOutcome.FAILED and item.stash.get(_KNOWN_ISSUE_KEY, None):
                outcome = KNOWN_PLATFORM_ISSUE
                allure.dynamic.tag(outcome)
            allure.dynamic.label(LABEL_OUTCOME, outcome)
            if outcome in (SkipKind.NOT_APPLICABLE, SkipKind.NOT_RUN):
                allure.dynamic.tag(outcome)  # the tree's Tags filter shows one kind of skip
        return report


def skip_message(kind: SkipKind, call: pytest.CallInfo[None], report: pytest.TestReport) -> str:
    """The skip's text, starting with the prefix of `kind` (added unless it is already there)."""
    wasxfail = getattr(report, "wasxfail", None)
    if wasxfail is not None:
        text = f"xfail: {wasxfail}".rstrip(": ")
    else:
        exc = call.excinfo.value if call.excinfo else None
        text = str(getattr(exc, "msg", None) or exc or "")
    prefix = MESSAGE_PREFIX[kind]
    return text if text.startswith(prefix) else prefix + text


def _set_allure_message(config: pytest.Config, message: str) -> None:
    listener = config.pluginmanager.get_plugin("allure_listener")
    logger = getattr(listener, "allure_logger", None)
    result = logger.get_test(None) if logger is not None else None
    if result is None:
        return
    from allure_commons.model2 import StatusDetails

    details = result.statusDetails or StatusDetails()
    details.message = message
    result.statusDetails = details


def requirement_ids(item: pytest.Item) -> list[str]:
    """The requirement the harness says the item proves (none for a test outside the suite)."""
    requirement = suite_requirement(item)
    return [requirement] if requirement else []


def apply_dynamic_labels(
    item: pytest.Item, catalog: Mapping[str, RequirementInfo], facts: RunFacts | None
) -> None:
    """Label the running test in Allure (a no-op when Allure is not recording), once."""
    ids = requirement_ids(item)
    if not ids or item.stash.get(_LABELLED_KEY, False):
        return
    item.stash[_LABELLED_KEY] = True
    import allure

    infos = [catalog.get(i) or RequirementInfo(id=i, suite="", level="", statement="") for i in ids]
    for info in infos:
        if info.suite:
            allure.dynamic.parent_suite(info.suite)
            allure.dynamic.epic(info.suite)
        allure.dynamic.suite(f"{info.id}: {info.statement}" if info.statement else info.id)
        allure.dynamic.feature(info.id)
        if info.statement:
            allure.dynamic.story(info.statement)
    levels = sorted({i.level for i in infos if i.level in _LEVEL_RANK}, key=_LEVEL_RANK.get)
    if levels:
        allure.dynamic.severity(allure.severity_level(SEVERITY_BY_LEVEL[levels[0]]))
        allure.dynamic.tag(*levels)
    if facts is not None:
        if facts.driver_name:
            allure.dynamic.label("driver", facts.driver_name)
        if facts.kubernetes_version:
            allure.dynamic.label("kubernetes_version", facts.kubernetes_version)


def environment_properties(summary: Mapping[str, Any]) -> dict[str, str]:
    """The Allure environment widget's rows, from summary.json's content, with no local
    absolute path (conformance/report/paths.py)."""
    run = summary.get("run", {})
    driver = summary.get("driver", {})
    cluster = summary.get("cluster", {})
    gates = cluster.get("feature_gates", {}) or {}
    props = {
        "Verdict": summary.get("verdict"),
        "Verdict.text": summary.get("verdict_text"),
        "Verdict.scope": ", ".join(summary.get("verdict_scope") or []),
        **_partial_properties(summary.get("partial")),
        "Verdict.none": summary.get("no_verdict_reason"),
        "Verdict.none.detail": summary.get("no_verdict_detail"),
        "Run": run.get("id"),
        "Driver": driver.get("name"),
        "Driver.profile": driver.get("profile_path"),
        "Driver.profile.digest": driver.get("profile_digest"),
        "Driver.capabilities": ", ".join(driver.get("capabilities", []) or []),
        "Driver.images": ", ".join(image_reference(i) for i in driver.get("images") or []),
        "Kubernetes.version": cluster.get("kubernetes_version"),
        "Cluster.provider": cluster.get("provider"),
        "Cluster.name": cluster.get("name"),
        "Cluster.nodes": ", ".join(str(n.get("name", "")) for n in cluster.get("nodes", []) or []),
        **build_properties(cluster),
        "Cluster.DRA.apis": ", ".join(cluster.get("served_dra_apis", []) or []),
        "FeatureGates.enabled": ", ".join(sorted(k for k, v in gates.items() if v)),
        "FeatureGates.disabled": ", ".join(sorted(k for k, v in gates.items() if not v)),
        "Pytest.workers": str(run.get("xdist_workers", 0)),
        "Python": run.get("python"),
        **_provenance_properties(summary),
    }
    return {k: portable(str(v)) for k, v in props.items() if v not in (None, "")}


def _partial_properties(partial: Mapping[str, Any] | None) -> dict[str, str]:
    if not partial:
        return {}
    return {
        "Verdict.partial": f"{partial['selected']} of {partial['total']} MUST selected "
        "(not a certification)",
        "Verdict.partial.not_selected": ", ".join(partial.get("not_selected") or ()),
    }


def _provenance_properties(summary: Mapping[str, Any]) -> dict[str, Any]:
    prov = summary.get("provenance") or {}
    return {
        "Suite.version": prov.get("suite_version"),
        "Suite.catalog.sha256": (prov.get("catalog") or {}).get("sha256"),
        "Suite.known_issues.sha256": (prov.get("known_issues") or {}).get("sha256"),
        "Suite.scenarios.sha256": (prov.get("scenarios") or {}).get("sha256"),
        "Suite.modified": modified_text(summary) or ("no" if prov else None),
        "Command": " ".join(prov.get("command_line") or []),
    }


def _escape_property(text: str, *, key: bool) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    if key:
        for ch in (" ", "=", ":"):
            text = text.replace(ch, "\\" + ch)
    return text


def write_environment(results_dir: Path, summary: Mapping[str, Any]) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        f"{_escape_property(k, key=True)}={_escape_property(v, key=False)}"
        for k, v in environment_properties(summary).items()
    ]
    path = results_dir / ENVIRONMENT_FILE
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_categories(results_dir: Path) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / CATEGORIES_FILE
    path.write_text(json.dumps(CATEGORIES, indent=2) + "\n", encoding="utf-8")
    return path
