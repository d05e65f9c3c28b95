"""summary.md's "Driver calls per test": the kubelet's gRPC calls to the driver on each test's
node(s) during its window. The kubelet counts per node, not per test, so each row says how many
other tests' windows overlapped on those nodes (their calls are in the row too)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.report.call_sharing import call_nodes, shared_with
from conformance.report.markdown_first import cell

METHODS = ("NodePrepareResources", "NodeUnprepareResources")
HEADING = "## Driver calls per test"


def sharing_text(n: int | None) -> str:
    """What a row's figures cover, in the reader's words."""
    base = "calls on its node(s) during its window"
    if n is None:
        return f"{base}; possibly shared with other tests (not counted)"
    if n == 0:
        return f"{base}; shared with no other test"
    return f"{base}; shared with {n} other test{'' if n == 1 else 's'}"


def per_test_calls_section(summary: Mapping[str, Any]) -> list[str]:
    tests = [t for t in summary.get("tests") or () if t.get("driver_calls")]
    if not tests:
        return []
    counts = _shared_counts(summary, tests)
    out = [
        HEADING,
        "",
        "The kubelet's gRPC calls to the driver on each test's node(s) while the test ran. "
        "The kubelet counts per node: a test whose window overlapped on the same node "
        "counts in the row too (`tests[].driver_calls_shared_with` in summary.json).",
        "",
        "| test | node(s) | prepare calls | unprepare calls | other calls | failed "
        "| what it counts |",
        "|---|---|---|---|---|---|---|",
    ]
    for test, n in zip(tests, counts, strict=True):
        rows = test["driver_calls"]
        by_method = {r.get("method"): r for r in rows}
        other = sum(int(r.get("calls") or 0) for r in rows if r.get("method") not in METHODS)
        failed = sum(int(r.get("errors") or 0) for r in rows)
        prepare, unprepare = (int((by_method.get(m) or {}).get("calls") or 0) for m in METHODS)
        out.append(
            f"| {cell(test.get('nodeid'))} | {cell(', '.join(sorted(call_nodes(test))))} "
            f"| {prepare} | {unprepare} | {other} | {failed} | {sharing_text(n)} |"
        )
    return [*out, ""]


def _shared_counts(
    summary: Mapping[str, Any], measured: list[Mapping[str, Any]]
) -> list[int | None]:
    """summary.json's counts; a summary written before it had them is counted here."""
    if all("driver_calls_shared_with" in t for t in measured):
        return [t["driver_calls_shared_with"] for t in measured]
    everyone = list(summary.get("tests") or ())
    by_test = dict(zip((id(t) for t in everyone), shared_with(everyone), strict=True))
    return [by_test[id(t)] for t in measured]
