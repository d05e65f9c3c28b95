"""Declared against observed, per capability: what the profile promised, and what the run saw
the driver do. A declared capability is observed through its requirements (which decide the
verdict); an undeclared one only when the run probed it (`--dra-probe-capabilities`), outside
the verdict. A vendor sees what the driver really supports, whatever its profile says."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from conformance.report.catalog import RequirementInfo
from conformance.report.outcomes import TestRecord
from conformance.report.verdict import RequirementResult, RequirementStatus, probe_observation

WORKING, NOT_WORKING, NOT_OBSERVED, NOT_PROBED = (
    "working",
    "not working",
    "not observed",
    "not probed",
)


def capabilities_seen(
    catalog: Mapping[str, RequirementInfo],
    results: Iterable[RequirementResult],
    records: Iterable[TestRecord],
    declared: Iterable[str],
) -> dict[str, dict[str, Any]]:
    """{capability: {declared, observed, requirements[]}} for every capability the catalog
    gates a requirement on."""
    status = {r.id: r.status for r in results}
    promised = set(declared)
    probes = [r for r in records if r.probe]
    out: dict[str, dict[str, Any]] = {}
    for capability in sorted({c for info in catalog.values() for c in info.capabilities}):
        ids = [i for i, info in catalog.items() if capability in info.capabilities]
        if capability in promised:
            observed = _from_statuses([status[i] for i in ids if i in status])
        else:
            probed = [r for r in probes if capability in r.probe]
            observed = probe_observation(probed) if probed else NOT_PROBED
        out[capability] = {
            "declared": capability in promised,
            "observed": observed,
            "requirements": ids,
        }
    return out


def _from_statuses(statuses: list[RequirementStatus]) -> str:
    if RequirementStatus.FAILED in statuses:
        return NOT_WORKING
    if (
        statuses
        and RequirementStatus.PASSED in statuses
        and all(s in (RequirementStatus.PASSED, RequirementStatus.NOT_APPLICABLE) for s in statuses)
    ):
        return WORKING
    return NOT_OBSERVED


def markdown_section(summary: Mapping[str, Any]) -> list[str]:
    """The table, when the run observed anything beyond its declarations or probed."""
    seen = summary.get("capabilities_seen") or {}
    if not seen:
        return []
    out = [
        "## Capabilities: declared and observed",
        "",
        "| capability | declared | observed | requirements |",
        "|---|---|---|---|",
    ]
    for name, row in seen.items():
        out.append(
            f"| {name} | {'yes' if row.get('declared') else 'no'} | {row.get('observed')} | "
            f"{', '.join(row.get('requirements') or ())} |"
        )
    out += [
        "",
        "Declared: its requirements decide the verdict. Undeclared: observed only when the run "
        "probed it (`--dra-probe-capabilities`), outside the verdict.",
        "",
    ]
    return out
