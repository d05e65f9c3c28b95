"""A requirement-level JUnit file for Sonobuoy, made from summary.json.

Sonobuoy's `junit` result format knows passed, failed and skipped. junit.xml names tests; this
file names requirements, one test case each, so `sonobuoy results` lists every requirement. Our
status travels in each case's system-out (`status: not-run`) and in the failure, error or skip
message, so the three Sonobuoy statuses never hide which of ours it was: failed and error are
Sonobuoy failures; not-run, not-applicable and known-platform-issue are skips.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

FILE_NAME = "sonobuoy-junit.xml"
SUITE_NAME = "dra-conformance"
_SKIPPED = ("not-run", "not-applicable", "known-platform-issue")


def _message(requirement: Mapping[str, Any]) -> str:
    text = f"{requirement['status']}: {requirement.get('reason') or ''}".rstrip(": ")
    remedy = requirement.get("remedy")
    return f"{text} (to run it: {remedy})" if remedy else text


def _case(suite: ET.Element, requirement: Mapping[str, Any]) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"{SUITE_NAME}.{requirement.get('suite') or 'unknown'}",
        name=f"{requirement['id']} [{requirement.get('level')}] {requirement.get('statement')}",
        time=f"{float(requirement.get('duration_s') or 0):.3f}",
    )
    status = str(requirement["status"])
    if status == "failed":
        ET.SubElement(case, "failure", message=_message(requirement), type="failed")
    elif status == "error":
        ET.SubElement(case, "error", message=_message(requirement), type="error")
    elif status in _SKIPPED:
        ET.SubElement(case, "skipped", message=_message(requirement))
    ET.SubElement(case, "system-out").text = f"status: {status}"


def requirements_junit(summary: Mapping[str, Any]) -> str:
    """One test suite, one test case per requirement of the summary, the verdict as a property."""
    requirements = list(summary.get("requirements") or [])
    suite = ET.Element(
        "testsuite",
        name=SUITE_NAME,
        tests=str(len(requirements)),
        failures=str(sum(1 for r in requirements if r["status"] in ("failed", "error"))),
        time=f"{float((summary.get('run') or {}).get('duration_s') or 0):.3f}",
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("dra_verdict", summary.get("verdict")),
        ("dra_verdict_text", summary.get("verdict_text")),
        ("dra_run_id", (summary.get("run") or {}).get("id")),
    ):
        ET.SubElement(properties, "property", name=name, value=str(value or ""))
    for requirement in requirements:
        _case(suite, requirement)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
