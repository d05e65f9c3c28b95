"""What a gate whose later run prepares claims slower must say (gate.json, gate.md and the
side-by-side chart): shared by the gate against a baseline and the gate between two versions."""

from __future__ import annotations

from pathlib import Path


def assert_prepare_latency_regression(
    document: dict, driver: str, report_dir: Path, delay_s: float, *, same_cluster: bool = True
) -> None:
    """The delayed prepare is flagged in gate.json and gate.md, beside the chart, in a passing
    gate; on one cluster, unprepare, which the fault does not slow, stays far below the delay.
    Whether unprepare is flagged is not asserted: with one call a side its p95 is that call,
    which a loaded machine can slow by more than the 50 % threshold."""
    latency = document["driver_latency"]
    assert latency["decides_verdict"] is False and latency["threshold"] == 0.5, latency
    prepare = f"kubelet → driver (gRPC): {driver} NodePrepareResources"
    assert prepare in latency["regressions"], latency
    rows = {o["operation"]: o for o in latency["operations"] if o["driver"] == driver}
    after_p95 = rows["NodePrepareResources"]["to"]["p95"]
    assert after_p95.get("s", after_p95.get("gt", 0)) >= delay_s * 0.8, rows
    if same_cluster:
        unprepare_p95 = rows["NodeUnprepareResources"]["to"]["p95"]
        assert unprepare_p95.get("s", delay_s) < delay_s / 2, rows
    report = (report_dir / "gate.md").read_text()
    assert ": PASS" in report.splitlines()[0], report
    assert "Latency regressions: " + prepare + " p95 " in report, report
    chart = report_dir / document["latency_chart"]
    assert chart.name == "gate-latency.svg" and f"]({chart.name})" in report, report
    svg = chart.read_text()
    assert svg.startswith("<?xml") and "NodePrepareResources" in svg and chart.stat().st_size > 5000
