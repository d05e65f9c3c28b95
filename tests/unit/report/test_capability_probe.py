"""Probing undeclared capabilities: the probed tests observe, never decide; the summary says
per capability what was declared and what was observed."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conformance.report.capabilities_seen import capabilities_seen, markdown_section
from conformance.report.catalog import RequirementInfo
from conformance.report.junit_records import records_from_junit
from conformance.report.outcomes import PROP_PROBE
from conformance.report.verdict import (
    CONFORMANT,
    RequirementStatus,
    decide_verdict,
    requirement_results,
)
from tests.unit.report.test_verdict import record

CATALOG = {
    "CORE": RequirementInfo("CORE", "core", "MUST", "core"),
    "ADMIN": RequirementInfo("ADMIN", "allocation", "MAY", "admin", capabilities=("admin-access",)),
    "OPAQUE": RequirementInfo(
        "OPAQUE", "allocation", "MAY", "cfg", capabilities=("opaque-config",)
    ),
    "SHARE": RequirementInfo(
        "SHARE", "allocation", "MUST", "share", capabilities=("shared-claims",)
    ),
}


def _probe(nodeid: str, req: str, capability: str, **phases: str):
    rec = record(nodeid, req, **phases)
    rec.probe = (capability,)
    return rec


def test_a_probed_failure_never_decides_and_is_observed_not_working() -> None:
    records = [
        record("core", "CORE"),
        _probe("share", "SHARE", "shared-claims", call="failed"),  # a MUST, undeclared
        _probe("admin", "ADMIN", "admin-access"),
        record("opaque", "OPAQUE", call="failed"),  # declared: a promise it broke
    ]
    declared = ("opaque-config",)
    results = requirement_results(CATALOG, records, declared=declared)
    by_id = {r.id: r for r in results}
    assert by_id["SHARE"].status is RequirementStatus.NOT_APPLICABLE
    assert by_id["SHARE"].reason == (
        "the profile does not declare shared-claims (probed: not working; outside the verdict)"
    )
    assert by_id["ADMIN"].reason.endswith("(probed: working; outside the verdict)")
    verdict = decide_verdict(results)
    assert verdict.verdict != CONFORMANT and verdict.reasons[0].startswith("OPAQUE (MAY, promised")
    seen = capabilities_seen(CATALOG, results, records, declared)
    assert seen == {
        "admin-access": {"declared": False, "observed": "working", "requirements": ["ADMIN"]},
        "opaque-config": {"declared": True, "observed": "not working", "requirements": ["OPAQUE"]},
        "shared-claims": {"declared": False, "observed": "not working", "requirements": ["SHARE"]},
    }
    table = "\n".join(markdown_section({"capabilities_seen": seen}))
    assert "| shared-claims | no | not working | SHARE |" in table
    assert "| opaque-config | yes | not working | OPAQUE |" in table


def test_without_probing_an_undeclared_capability_is_not_probed() -> None:
    results = requirement_results(CATALOG, [record("core", "CORE")], declared=())
    seen = capabilities_seen(CATALOG, results, [], ())
    assert {c: row["observed"] for c, row in seen.items()} == dict.fromkeys(seen, "not probed")


def test_the_probe_mark_survives_junit() -> None:
    rec = _probe("scenarios/a.py::t", "ADMIN", "admin-access", call="failed")
    assert (PROP_PROBE, "admin-access") in rec.junit_properties()
    props = "".join(f'<property name="{n}" value="{v}"/>' for n, v in rec.junit_properties())
    root = ET.fromstring(
        f'<testsuite><testcase classname="scenarios.a" name="t"><properties>{props}'
        '</properties><failure message="x"/></testcase></testsuite>'
    )
    [back] = records_from_junit(root)
    assert back.probe == ("admin-access",)
    result = requirement_results(CATALOG, [back])[1]
    assert result.status is RequirementStatus.NOT_APPLICABLE


def test_probing_sets_aside_only_the_undeclared_capability_parts() -> None:
    from conformance.model.requirements import without_capabilities

    capability = "the driver profile does not declare capability x (add x to capabilities in p)"
    assert without_capabilities(capability) is None
    gate = "feature gate DRAAdminAccess is disabled in the cluster"
    assert without_capabilities(f"{gate}; {capability}") == gate
    assert without_capabilities(None) is None
