"""The feature gates summary.md shows: the API server reports about 200, of which the DRA ones
and those the catalog's requirements need say something of a DRA run; summary.json keeps all."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DRA_PREFIX = "DRA"
DRA_GATE = "DynamicResourceAllocation"


def dra_gate_names(summary: Mapping[str, Any]) -> set[str]:
    """The gates that matter here: DRA*, DynamicResourceAllocation, and every gate a
    requirement of the catalog gates on (requirements[].feature_gates)."""
    gates = (summary.get("cluster") or {}).get("feature_gates") or {}
    wanted = {g for g in gates if g.startswith(DRA_PREFIX) or g == DRA_GATE}
    for req in summary.get("requirements") or ():
        wanted.update(str(g) for g in req.get("feature_gates") or ())
    return wanted


def gates_line(summary: Mapping[str, Any]) -> str:
    """ "- DRA feature gates: DRAAdminAccess on, ...; 187 more in summary.json" (a gate the
    catalog needs that the cluster does not report is "not reported": a gate that went GA is
    removed from the metrics)."""
    gates = (summary.get("cluster") or {}).get("feature_gates") or {}
    if not gates:
        return "- DRA feature gates: unknown"
    shown = sorted(dra_gate_names(summary))
    states = ", ".join(
        f"{g} {'not reported' if g not in gates else 'on' if gates[g] else 'off'}" for g in shown
    )
    more = len(set(gates) - set(shown))
    rest = f"; {more} more in summary.json (`cluster.feature_gates`)" if more else ""
    return f"- DRA feature gates: {states or 'none reported'}{rest}"
