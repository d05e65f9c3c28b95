"""`junit.xml` in the run directory: point pytest's junitxml at it, and read its counts back."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

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
    xmlpath = getattr(config.option, "xmlpath", None)
    if xmlpath:
        source = Path(xmlpath)
        if not source.is_absolute():
            source = Path(config.invocation_params.dir) / source
        if source.is_file() and source.resolve() != target.resolve():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    return target if target.is_file() else None


def parse_junit_counts(path: str | Path) -> JUnitCounts:
    """Sum tests/failures/errors/skipped over every <testsuite> of a JUnit XML file."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.iter("testsuite")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in totals:
            totals[key] += int(suite.get(key, "0") or 0)
    return JUnitCounts(**totals)


def add_suite_properties(
    config: pytest.Config, path: str | Path, properties: Mapping[str, str]
) -> None:
    """Add `<property>` entries to every `<testsuite>` of the run's JUnit file (in place), and
    keep the copy the user asked for with `--junitxml` the same."""
    tree = ET.parse(path)
    root = tree.getroot()
    for suite in [root] if root.tag == "testsuite" else root.iter("testsuite"):
        node = suite.find("properties")
        if node is None:
            node = ET.Element("properties")
            suite.insert(0, node)
        for name, value in properties.items():
            ET.SubElement(node, "property", name=name, value=value)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    xmlpath = getattr(config.option, "xmlpath", None)
    if xmlpath:
        source = Path(xmlpath)
        if not source.is_absolute():
            source = Path(config.invocation_params.dir) / source
        if source.is_file() and source.resolve() != Path(path).resolve():
            shutil.copyfile(path, source)
