"""SVG charts beside summary.md, drawn from summary.json with matplotlib (no pyplot: no global
state, no display): the latency distribution of each driver operation, the run's timeline (one
row per worker, each test a bar coloured by its outcome, its lease wait shaded) and the driver's
prepare and unprepare latency per test, and the driver's load over the run (calls per step
between the periodic kubelet reads, failed calls, claims held prepared); beside gate.md, the two
runs' latency per operation side by side."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.report.gate_latency import (
    LatencyChange,
    LatencyComparison,
    LatencyRow,
    chart_rows,
)

CHARTS_DIR = "charts"
LATENCY_SVG = "driver-latency.svg"
TIMELINE_SVG = "timeline.svg"
PER_TEST_SVG = "driver-calls-per-test.svg"
LOAD_SVG = "driver-load.svg"
LOAD_SERIES = (
    ("prepare", "NodePrepareResources", "#4a78b5"),
    ("unprepare", "NodeUnprepareResources", "#e08a1e"),
    ("errors", "failed calls", "#d43f3a"),
)
PER_TEST_METHODS = (("NodePrepareResources", "#4a78b5"), ("NodeUnprepareResources", "#e08a1e"))
TEST_LABEL_CHARS = 60
GATE_LATENCY_SVG = "gate-latency.svg"
SIDE_COLOURS = ("#8fb3de", "#2f5f9e")  # the earlier run, the later one
OUTCOME_COLOURS = {
    "passed": "#3c9a3c",
    "failed": "#d43f3a",
    "error": "#e08a1e",
    "not-applicable": "#9e9e9e",
    "not-run": "#c8c8c8",
}
_OPERATION_ROWS = (("grpc", "method"), ("kubelet_operations", "operation"))


def write_charts(run_dir: Path, summary: Mapping[str, Any]) -> list[Path]:
    """Draw what the summary has figures for; the paths written (relative names in
    summary["artifacts"]["charts"] are the caller's)."""
    out = Path(run_dir) / CHARTS_DIR
    written = []
    rows = latency_rows(summary)
    if rows:
        written.append(_save(_latency_figure(rows), out / LATENCY_SVG))
    tests = [t for t in summary.get("tests") or () if t.get("start") and t.get("stop")]
    if tests:
        written.append(_save(_timeline_figure(tests), out / TIMELINE_SVG))
    measured = per_test_calls(summary)
    if measured:
        written.append(_save(_per_test_figure(measured), out / PER_TEST_SVG))
    points = load_points(summary)
    if points:
        written.append(_save(_load_figure(points), out / LOAD_SVG))
    return written


def load_points(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The driver's load time line (driver_operations.timeline), when the run read it."""
    operations = summary.get("driver_operations") or {}
    points = (operations.get("timeline") or {}).get("points") or []
    return points if len(points) > 1 else []


def _load_figure(points: list[Mapping[str, Any]]) -> Any:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 3.2), layout="constrained")
    ax = figure.subplots()
    ends = [p["t_s"] for p in points]
    for key, label, colour in LOAD_SERIES:
        ax.step(ends, [p[key] for p in points], where="pre", color=colour, label=label)
    ax.set_xlabel("seconds since the run's first read (each step: the calls since the read before)")
    ax.set_ylabel("kubelet calls to the driver")
    held = ax.twinx()
    held.plot(ends, [p["claims_in_use"] for p in points], color="#3c9a3c", linestyle=":")
    held.set_ylabel("claims held prepared (dotted)", color="#3c9a3c")
    ax.legend(loc="upper left", fontsize=7)
    ax.set_title("The driver's load over the run (every kubelet, read periodically)", fontsize=9)
    return figure


def per_test_calls(summary: Mapping[str, Any]) -> list[tuple[str, dict[str, Mapping[str, Any]]]]:
    """(test, {method: its driver_calls row}) of each test whose window saw a prepare or an
    unprepare, in the summary's order."""
    wanted = {method for method, _ in PER_TEST_METHODS}
    found = []
    for test in summary.get("tests") or ():
        calls = test.get("driver_calls") or ()
        rows = {r["method"]: r for r in calls if r.get("calls") and r["method"] in wanted}
        if rows:
            found.append((str(test.get("nodeid", "")), rows))
    return found


def latency_rows(summary: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(title, row) of each measured operation that has buckets."""
    ops = summary.get("driver_operations") or {}
    rows = []
    for key, name in _OPERATION_ROWS:
        for row in ops.get(key) or ():
            if row.get("count") and row.get("buckets"):
                who = "kubelet → driver" if key == "grpc" else "kubelet"
                rows.append((f"{who}: {row[name]}", row))
    return rows


def _latency_figure(rows: list[tuple[str, Mapping[str, Any]]]) -> Any:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 2.2 * len(rows)), layout="constrained")
    axes = figure.subplots(len(rows), 1, squeeze=False)[:, 0]
    for ax, (title, row) in zip(axes, rows, strict=True):
        bounds, counts = row["buckets"]["le"], row["buckets"]["counts"]
        labels = [f"≤ {b:.3g}" for b in bounds] + [f"> {bounds[-1]:.3g}" if bounds else "all"]
        ax.bar(range(len(counts)), counts, color="#4a78b5")
        ax.set_xticks(range(len(counts)), labels, rotation=45, ha="right", fontsize=7)
        ax.set_title(f"{title} — {row['count']} calls, {row['errors']} errors", fontsize=9)
        ax.set_ylabel("calls", fontsize=8)
    figure.supxlabel("latency bucket (seconds)", fontsize=8)
    return figure


def _timeline_figure(tests: list[Mapping[str, Any]]) -> Any:
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    origin = min(t["start"] for t in tests)
    workers = sorted({t.get("worker") or "main" for t in tests})
    figure = Figure(figsize=(10, 1 + 0.5 * len(workers)), layout="constrained")
    ax = figure.subplots()
    for row, worker in enumerate(workers):
        for test in (t for t in tests if (t.get("worker") or "main") == worker):
            start, length = test["start"] - origin, max(test["stop"] - test["start"], 0.01)
            colour = OUTCOME_COLOURS.get(test.get("outcome"), "#777777")
            ax.broken_barh([(start, length)], (row - 0.4, 0.8), facecolors=colour)
            wait = min(test.get("lease_wait_s") or 0.0, length)
            if wait:
                ax.broken_barh([(start, wait)], (row - 0.4, 0.8), facecolors="white", alpha=0.6)
    ax.set_yticks(range(len(workers)), workers)
    ax.set_xlabel("seconds since the first test started")
    handles = [Patch(color=c, label=o) for o, c in OUTCOME_COLOURS.items()]
    handles.append(Patch(facecolor="white", edgecolor="#777777", label="lease wait"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=6)
    return figure


def _per_test_figure(measured: list[tuple[str, dict[str, Mapping[str, Any]]]]) -> Any:
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    figure = Figure(figsize=(10, 1.6 + 0.34 * len(measured)), layout="constrained")
    ax = figure.subplots()
    height = 0.8 / len(PER_TEST_METHODS)
    for index, (_, rows) in enumerate(measured):
        for side, (method, colour) in enumerate(PER_TEST_METHODS):
            row = rows.get(method)
            if row is None:
                continue
            y = index + (side - (len(PER_TEST_METHODS) - 1) / 2) * height
            ax.barh(y, row["mean_s"], height=height, color=colour)
            errors = f", {row['errors']} failed" if row.get("errors") else ""
            ax.annotate(f" {row['calls']}{errors}", (row["mean_s"], y), va="center", fontsize=6)
    labels = [_short_test_name(nodeid) for nodeid, _ in measured]
    ax.set_yticks(range(len(measured)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("mean latency of the kubelet's calls to the driver, seconds (calls after a bar)")
    ax.set_title(
        "Driver calls per test, on the test's nodes while it ran "
        "(a node shared with other tests counts their calls too)",
        fontsize=9,
    )
    handles = [Patch(color=c, label=m) for m, c in PER_TEST_METHODS]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    return figure


def _short_test_name(nodeid: str) -> str:
    """The test's name without its file path (and its parameters' id kept), cut to fit."""
    name = nodeid.rsplit("::", 1)[-1] or nodeid
    return name if len(name) <= TEST_LABEL_CHARS else name[: TEST_LABEL_CHARS - 1] + "…"


def write_gate_chart(
    directory: Path, comparison: LatencyComparison, labels: tuple[str, str]
) -> Path | None:
    """gate-latency.svg beside gate.md: per operation, p50 and p95 of each run (log scale, a
    regression's name in red); None when neither run measured an operation."""
    rows = chart_rows(comparison)
    if not rows:
        return None
    return _save(_gate_figure(rows, labels), Path(directory) / GATE_LATENCY_SVG)


def _gate_figure(rows: list[LatencyRow], labels: tuple[str, str]) -> Any:
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    figure = Figure(figsize=(9, 1.2 + 0.8 * len(rows)), layout="constrained")
    ax = figure.subplots()
    height = 0.38
    for index, row in enumerate(rows):
        for side, (latency, colour) in enumerate(
            zip((row.before, row.after), SIDE_COLOURS, strict=True)
        ):
            if latency is None or latency.p95 is None:
                continue
            y = index + (side - 0.5) * height
            ax.barh(y, latency.p95.seconds, height=height, color=colour)
            if latency.p50 is not None:
                ax.plot([latency.p50.seconds], [y], marker="|", markersize=12, color="black")
            beyond = ">" if latency.p95.beyond else ""
            ax.annotate(
                f" {beyond}{latency.p95.seconds:.3g} s ({latency.count})",
                (latency.p95.seconds, y),
                va="center",
                fontsize=7,
            )
    ax.set_xscale("log")
    ax.set_yticks(range(len(rows)), [f"{r.operation}\n{r.measured_by}" for r in rows], fontsize=8)
    for tick, row in zip(ax.get_yticklabels(), rows, strict=True):
        if row.change is LatencyChange.REGRESSION:
            tick.set_color("#d43f3a")
    ax.invert_yaxis()
    ax.set_xlabel("p95 latency, seconds (log scale; | p50; calls in brackets)")
    ax.set_title("Driver operation latency: " + " vs ".join(labels), fontsize=10)
    ax.legend(handles=[Patch(color=c, label=n) for c, n in zip(SIDE_COLOURS, labels, strict=True)])
    return figure


def _save(figure: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="svg")
    return path
