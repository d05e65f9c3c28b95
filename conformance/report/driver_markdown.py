"""summary.md's "Driver operations" and "Cluster inventory" sections, from summary.json (also
the run-level Allure attachment and the JUnit properties' text)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_NOT_MEASURED = "Not measured (the run had no DRA harness, or it could not be set up)."
_SOURCES = (
    ("grpc", "kubelet → driver (gRPC)", "driver", "method"),
    ("kubelet_operations", "kubelet DRA manager", None, "operation"),
    ("scheduler", "scheduler (DynamicResources)", None, "extension_point"),
)


def _cell(value: Any) -> str:
    text = " ".join(str(value if value is not None else "").split())
    return text.replace("|", "\\|")


def quantile_text(value: Mapping[str, float] | None) -> str:
    """{le: 0.05} -> "≤ 0.05 s", {gt: 10} -> "> 10 s" (bucket estimates)."""
    if not value:
        return ""
    if "gt" in value:
        return f"> {value['gt']:.3g} s"
    return f"≤ {value['le']:.3g} s"


def row_text(row: Mapping[str, Any]) -> str:
    """One operation's figures on one line (JUnit property values, terminal lines)."""
    mean = f"{row['mean_s']:.4f} s" if row.get("mean_s") is not None else "n/a"
    quantiles = ", ".join(
        f"{name} {quantile_text(row.get(name))}" for name in ("p50", "p95", "p99") if row.get(name)
    )
    return f"count {row['count']}, errors {row['errors']}, mean {mean}, {quantiles}"


def driver_operations_section(summary: Mapping[str, Any]) -> list[str]:
    ops = summary.get("driver_operations")
    out = ["## Driver operations", ""]
    if ops is None:
        return [*out, _NOT_MEASURED, ""]
    if ops.get("not_available"):
        return [*out, f"Not available ({_cell(ops['not_available'])}).", ""]
    window = ops.get("window") or {}
    out.append(
        f"What Kubernetes measured between the run's start and end ({window.get('start')} → "
        f"{window.get('end')}, {window.get('duration_s', 0):.0f} s). Percentiles are estimates "
        "from histogram buckets: ≤ B means at most B seconds."
    )
    out.append("")
    rows = _table_rows(ops)
    unavailable = _unavailable(ops)
    if rows:
        out.append("| measured by | driver | operation | count | errors | mean | p50 | p95 | p99 |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        out.extend(rows)
    elif "grpc" not in (ops.get("unavailable") or {}):
        out.append("No DRA operation was measured in the run's window.")
    if unavailable:
        out.extend(["", *unavailable])
    out.append("")
    out.extend(_notes(ops))
    return out


def charts_section(summary: Mapping[str, Any]) -> list[str]:
    """The run's charts (summary.json's artifacts), shown where summary.md is read."""
    charts = (summary.get("artifacts") or {}).get("charts") or []
    if not charts:
        return []
    return ["## Charts", "", *[line for path in charts for line in (f"![{path}]({path})", "")]]


def _unavailable(ops: Mapping[str, Any]) -> list[str]:
    """A line per section that could not be read: "not available (why)", never a zero."""
    why = ops.get("unavailable") or {}
    sections = [(key, measured_by) for key, measured_by, _, _ in _SOURCES if ops.get(key) is None]
    # its figures are summary.json's only, but what keeps them unread is said here too
    sections.append(("claim_controller", "resource-claim controller"))
    return [
        f"- {measured_by}: not available ({_cell(why[key])})"
        for key, measured_by in sections
        if key in why
    ]


def _table_rows(ops: Mapping[str, Any]) -> list[str]:
    lines = []
    for key, measured_by, driver_key, op_key in _SOURCES:
        for row in ops.get(key) or ():
            mean = f"{row['mean_s']:.4f} s" if row.get("mean_s") is not None else ""
            lines.append(
                f"| {measured_by} | {_cell(row.get(driver_key) if driver_key else '')} "
                f"| {_cell(row.get(op_key))} | {row['count']} | {row['errors']} | {mean} "
                f"| {quantile_text(row.get('p50'))} | {quantile_text(row.get('p95'))} "
                f"| {quantile_text(row.get('p99'))} |"
            )
    return lines


def _notes(ops: Mapping[str, Any]) -> list[str]:
    out = []
    sources = ops.get("sources") or {}
    read = sorted(s for s, state in sources.items() if state == "read")
    out.append(f"- read: {', '.join(read) or 'nothing'}")
    out.extend(
        f"- {_cell(s)}: {_cell(state)}" for s, state in sorted(sources.items()) if s not in read
    )
    if ops.get("scheduler_note"):
        out.append(f"- scheduler: {_cell(ops['scheduler_note'])}")
    for driver, counts in sorted((ops.get("claims_in_use") or {}).items()):
        out.append(
            f"- claims in use ({_cell(driver)}, all kubelets): {_number(counts.get('start'))} at "
            f"the start, {_number(counts.get('end'))} at the end"
        )
    reads = ops.get("reads") or {}
    if reads:
        out.append(
            f"- every kubelet read {reads.get('whole', 0)} times over the run, and "
            f"{reads.get('around_restarts', 0)} times right before and after the suite's own "
            "restarts: the counts are summed across each restart"
        )
    for reset in ops.get("counter_resets") or ():
        out.append(f"- restart: {_cell(reset)}")
    out.append("")
    return out


def _number(value: Any) -> str:
    return "not read" if value is None else f"{value:g}"


def cluster_inventory_section(summary: Mapping[str, Any]) -> list[str]:
    inventory = summary.get("cluster_inventory")
    out = ["## Cluster inventory", ""]
    if inventory is None:
        return [*out, _NOT_MEASURED, ""]
    if inventory.get("not_available"):
        return [*out, f"Not available ({_cell(inventory['not_available'])}).", ""]
    claims = inventory.get("claims") or {}
    states = ", ".join(f"{n} {state}" for state, n in claims.items() if state != "total")
    out.append(f"At the end of the run. ResourceClaims: {states} (total {claims.get('total', 0)}).")
    out.append("")
    pools = inventory.get("pools") or []
    if pools:
        out.append("| driver | pool | devices | allocated | free | tainted |")
        out.append("|---|---|---|---|---|---|")
        out.extend(
            f"| {_cell(p['driver'])} | {_cell(p['pool'])} | {p['devices']} | {p['allocated']} "
            f"| {p['free']} | {p['tainted']} |"
            for p in pools
        )
    else:
        out.append("No ResourceSlice publishes a device.")
    out.append("")
    out.append("Device health is not in the API's objects (only in pods' status): not shown here.")
    out.append("")
    return out
