"""`junit.xml` in the run directory: point pytest's junitxml at it, and read its counts back."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.report.driver_markdown import row_text

JUNIT_XML = "junit.xml"


@dataclass(frozen=True)
class JUnitCounts:
    tests: int
    failures: int
    errors: int
    skipped: int


def ensure_junit_path(config: pytest.Config, run_dir: Path) -> None:
    """Write JUnit into `<run dir>/junit.xml` unless the user passed `--junitxml`.

    Must run before pytest's junitxml plugin configures (the collector does it when it is
    created, from a tryfirst pytest_configure); `ensure_junit_writer` catches a late call.
    """
    if getattr(config.option, "xmlpath", None):
        return
    config.option.xmlpath = str(Path(run_dir) / JUNIT_XML)


def ensure_junit_writer(config: pytest.Config) -> None:
    """At session start: if junitxml configured before the path was set, start it now."""
    if hasattr(config, "workerinput") or not getattr(config.option, "xmlpath", None):
        return
    if not config.pluginmanager.has_plugin("junitxml"):  # -p no:junitxml
        return
    from _pytest import junitxml

    if config.stash.get(junitxml.xml_key, None) is not None:
        return
    junitxml.pytest_configure(config)
    writer = config.stash.get(junitxml.xml_key, None)
    if writer is not None:
        writer.pytest_sessionstart()  # registered during sessionstart: call its hook ourselves


def finalize_junit(config: pytest.Config, run_dir: Path) -> Path | None:
    """The run directory's junit.xml, copied there when the user wrote it elsewhere."""
    target = Path(run_dir) / JUNIT_XML
    source = junit_source(config)
    if source is not None and source.is_file() and source.resolve() != target.resolve():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return target if target.is_file() else None


def junit_source(config: pytest.Config) -> Path | None:
    """Where pytest writes JUnit (`--junitxml`, else the run directory's), absolute."""
    xmlpath = getattr(config.option, "xmlpath", None)
    if not xmlpath:
        return None
    source = Path(xmlpath)
    return source if source.is_absolute() else Path(config.invocation_params.dir) / source


def verdict_properties(summary: Mapping[str, Any]) -> dict[str, str]:
    """The run's verdict as JUnit <testsuite> properties (a CI parser reads them there)."""
    partial = summary.get("partial") or {}
    props = {
        "dra_run_id": (summary.get("run") or {}).get("id"),
        "dra_verdict": summary.get("verdict"),
        "dra_verdict_text": summary.get("verdict_text"),
        "dra_exit_code": summary.get("exit_code"),
        "dra_partial": (
            f"{partial['selected']} of {partial['total']} MUST selected" if partial else None
        ),
        "dra_not_selected": ", ".join(partial.get("not_selected") or ()) if partial else None,
        "dra_no_verdict_reason": summary.get("no_verdict_reason"),
    }
    return {k: str(v) for k, v in props.items() if v not in (None, "")}


def driver_operation_properties(summary: Mapping[str, Any]) -> dict[str, str]:
    """What Kubernetes measured of the driver, one <testsuite> property per operation:
    `dra_op:<measured by>:<driver or ->:<operation>` = "count N, errors E, mean M, p50 ≤ B, ..."
    (bucket estimates); `dra_driver_operations` = "not available (why)" when none was read."""
    ops = summary.get("driver_operations")
    if ops is None:
        return {}
    if ops.get("not_available"):
        return {"dra_driver_operations": f"not available ({ops['not_available']})"}
    props = {}
    for key, measured_by, driver_key, op_key in (
        ("grpc", "grpc", "driver", "method"),
        ("kubelet_operations", "kubelet", None, "operation"),
        ("scheduler", "scheduler", None, "extension_point"),
    ):
        for row in ops.get(key) or ():
            driver = row.get(driver_key) if driver_key else "-"
            props[f"dra_op:{measured_by}:{driver}:{row.get(op_key)}"] = row_text(row)
    for section, why in sorted((ops.get("unavailable") or {}).items()):
        props[f"dra_driver_operations:{section}"] = f"not available ({why})"
    unread = {s: state for s, state in (ops.get("sources") or {}).items() if state != "read"}
    for source, state in sorted(unread.items()):
        props[f"dra_metrics_source:{source}"] = state
    for reset in ops.get("counter_resets") or ():
        props.setdefault("dra_counter_resets", "")
        props["dra_counter_resets"] += ("; " if props["dra_counter_resets"] else "") + reset
    return props


def add_suite_properties(path: Path, properties: Mapping[str, str]) -> None:
    """Add (or replace) properties of every <testsuite> in a JUnit file, in place.

    pytest writes junit.xml before the verdict exists; the verdict is added afterwards, first
    among the suite's children as the JUnit schema wants <properties>.
    """
    tree = ET.parse(path)
    root = tree.getroot()
    for suite in [root] if root.tag == "testsuite" else root.iter("testsuite"):
        block = suite.find("properties")
        if block is None:
            block = ET.Element("properties")
            suite.insert(0, block)
        for prop in [p for p in block.findall("property") if p.get("name") in properties]:
            block.remove(prop)
        for name, value in properties.items():
            ET.SubElement(block, "property", {"name": name, "value": value})
    tree.write(path, encoding="utf-8", xml_declaration=True)


def parse_junit_counts(path: str | Path) -> JUnitCounts:
    """Sum tests/failures/errors/skipped over every <testsuite> of a JUnit XML file."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.iter("testsuite")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in totals:
            totals[key] += int(suite.get(key, "0") or 0)
    return JUnitCounts(**totals)
