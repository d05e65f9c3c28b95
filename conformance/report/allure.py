"""Allure results: where they go, the labels each test gets, environment and categories files.

Labels per test (from the requirement IDs in `item.user_properties`, or its `requirement`
marker): epic = suite, feature = requirement ID, story = statement, severity from the level
(MUST critical, SHOULD normal, MAY minor), tag = level, and `driver` / `kubernetes_version`
labels from the run facts.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from conformance.report.catalog import RequirementInfo
from conformance.report.facts import RunFacts
from conformance.report.outcomes import PROP_REQUIREMENT

ALLURE_RESULTS = "allure-results"
ENVIRONMENT_FILE = "environment.properties"
CATEGORIES_FILE = "categories.json"

SEVERITY_BY_LEVEL = {"MUST": "critical", "SHOULD": "normal", "MAY": "minor"}
_LEVEL_RANK = {"MUST": 0, "SHOULD": 1, "MAY": 2}

# First match wins (Allure 2 and Allure 3 alike). Regexes must be valid in Java (matched against
# the whole message) and JavaScript (searched), hence `[\s\S]*` rather than inline flags.
CATEGORIES: list[dict[str, Any]] = [
    {
        "name": "Not applicable",
        "description": "The requirement does not apply to this driver profile or cluster.",
        "matchedStatuses": ["skipped"],
        "messageRegex": r"[\s\S]*not applicable: [\s\S]*",
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
    """At session start: if allure-pytest configured before the dir was set, start it now."""
    if not allure_enabled(config) or not config.option.allure_report_dir:
        return
    if config.pluginmanager.get_plugin("allure_listener") is not None:
        return
    import allure_commons
    from allure_commons.logger import AllureFileLogger
    from allure_pytest.listener import AllureListener
    from allure_pytest.plugin import cleanup_factory

    listener = AllureListener(config)
    config.pluginmanager.register(listener, "allure_listener")
    allure_commons.plugin_manager.register(listener)
    config.add_cleanup(cleanup_factory(listener))
    file_logger = AllureFileLogger(str(Path(config.option.allure_report_dir).resolve()), False)
    allure_commons.plugin_manager.register(file_logger)
    config.add_cleanup(cleanup_factory(file_logger))


def requirement_ids(item: pytest.Item) -> list[str]:
    """The item's requirement IDs: user_properties first (the contract), else its markers."""
    ids = [str(v) for k, v in item.user_properties if k == PROP_REQUIREMENT]
    if not ids:
        ids = [str(a) for mark in item.iter_markers("requirement") for a in mark.args]
    return list(dict.fromkeys(ids))


def apply_dynamic_labels(
    item: pytest.Item, catalog: Mapping[str, RequirementInfo], facts: RunFacts | None
) -> None:
    """Label the running test in Allure (a no-op when Allure is not recording)."""
    ids = requirement_ids(item)
    if not ids:
        return
    import allure

    infos = [catalog.get(i) or RequirementInfo(id=i, suite="", level="", statement="") for i in ids]
    for info in infos:
        if info.suite:
            allure.dynamic.epic(info.suite)
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
    """The Allure environment widget's rows, from summary.json's content."""
    run = summary.get("run", {})
    driver = summary.get("driver", {})
    cluster = summary.get("cluster", {})
    gates = cluster.get("feature_gates", {}) or {}
    props = {
        "Verdict": summary.get("verdict"),
        "Verdict.scope": ", ".join(summary.get("verdict_scope") or []),
        "Run": run.get("id"),
        "Driver": driver.get("name"),
        "Driver.profile": driver.get("profile_path"),
        "Driver.profile.digest": driver.get("profile_digest"),
        "Driver.capabilities": ", ".join(driver.get("capabilities", []) or []),
        "Kubernetes.version": cluster.get("kubernetes_version"),
        "Cluster.provider": cluster.get("provider"),
        "Cluster.name": cluster.get("name"),
        "Cluster.nodes": ", ".join(str(n.get("name", "")) for n in cluster.get("nodes", []) or []),
        "Cluster.DRA.apis": ", ".join(cluster.get("served_dra_apis", []) or []),
        "FeatureGates.enabled": ", ".join(sorted(k for k, v in gates.items() if v)),
        "FeatureGates.disabled": ", ".join(sorted(k for k, v in gates.items() if not v)),
        "Pytest.workers": str(run.get("xdist_workers", 0)),
        "Python": run.get("python"),
    }
    return {k: str(v) for k, v in props.items() if v not in (None, "")}


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
