"""`summary.md`: the human-readable summary, rendered from summary.json's content only."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

SUMMARY_MD = "summary.md"

_STATUS_MARK = {
    "passed": "PASS",
    "failed": "FAIL",
    "skipped": "SKIP",
    "not-applicable": "N/A",
}


def _cell(value: Any) -> str:
    text = " ".join(str(value if value is not None else "").split())
    return text.replace("|", "\\|")


def _seconds(value: Any) -> str:
    return f"{float(value):.1f} s" if isinstance(value, int | float) else ""


def render_markdown(summary: Mapping[str, Any]) -> str:
    run = summary.get("run", {})
    driver = summary.get("driver", {})
    cluster = summary.get("cluster", {})
    counts = summary.get("counts", {})
    requirements = summary.get("requirements", [])
    out: list[str] = []

    verdict = summary.get("verdict", "NON-CONFORMANT")
    out.append(f"# DRA conformance: **{verdict}**")
    out.append("")
    scope = summary.get("verdict_scope")
    if scope:
        out.append(f"Verdict scope: {', '.join(scope)} only (not a full certification).")
        out.append("")
    must = counts.get("requirements", {}).get("by_level", {}).get("MUST", {})
    out.append(
        f"Driver `{driver.get('name') or 'unknown'}` on Kubernetes "
        f"`{cluster.get('kubernetes_version') or 'unknown'}` "
        f"({cluster.get('provider') or 'unknown'} cluster) — run `{run.get('id')}`, "
        f"{_seconds(run.get('duration_s'))}, "
        f"{run.get('xdist_workers') or 'no'} xdist workers."
    )
    out.append("")
    out.append(
        f"MUST requirements: {must.get('passed', 0)} passed, {must.get('failed', 0)} failed, "
        f"{must.get('skipped', 0)} skipped, {must.get('not_applicable', 0)} not applicable "
        f"(of {must.get('total', 0)})."
    )
    reasons = summary.get("verdict_reasons", [])
    if reasons:
        out.append("")
        out.append("Why it is not conformant:")
        out.append("")
        out.extend(f"- {_cell(r)}" for r in reasons)
    out.append("")

    tests = counts.get("tests", {})
    out.append(
        "Tests: "
        + ", ".join(
            f"{tests.get(k, 0)} {k.replace('_', '-')}"
            for k in ("passed", "failed", "error", "skipped", "not_applicable")
        )
        + f" (total {tests.get('total', 0)})."
    )
    out.append("")

    out.append("## Requirements")
    out.append("")
    out.append("| ID | level | suite | status | duration | reason |")
    out.append("|---|---|---|---|---|---|")
    for req in requirements:
        out.append(
            f"| {_cell(req.get('id'))} | {_cell(req.get('level'))} | {_cell(req.get('suite'))} "
            f"| {_STATUS_MARK.get(req.get('status'), _cell(req.get('status')))} "
            f"| {_seconds(req.get('duration_s')) if req.get('tests') else ''} "
            f"| {_cell(req.get('reason'))} |"
        )
    out.append("")

    not_applicable = [r for r in requirements if r.get("status") == "not-applicable"]
    out.append("## Not applicable")
    out.append("")
    if not_applicable:
        out.extend(f"- **{r['id']}** ({r['level']}): {_cell(r['reason'])}" for r in not_applicable)
    else:
        out.append("Every requirement applied to this driver and cluster.")
    out.append("")

    performance = summary.get("performance", {})
    metrics = performance.get("metrics", {})
    out.append("## Performance")
    out.append("")
    per_req = performance.get("requirement_duration_s")
    if per_req:
        out.append(
            f"Time per requirement: p50 {_seconds(per_req['p50'])}, "
            f"p95 {_seconds(per_req['p95'])}, max {_seconds(per_req['max'])} "
            f"over {per_req['count']} requirements."
        )
        out.append("")
    if metrics:
        out.append("| figure | count | p50 | p95 | min | max |")
        out.append("|---|---|---|---|---|---|")
        for name, m in metrics.items():
            out.append(
                f"| {_cell(name)} | {m['count']} | {m['p50']:.3f} s | {m['p95']:.3f} s "
                f"| {m['min']:.3f} s | {m['max']:.3f} s |"
            )
    else:
        out.append("No performance figures were recorded.")
    out.append("")

    out.append("## Run")
    out.append("")
    profile = driver.get("profile_path") or "unknown"
    out.append(f"- profile: `{profile}` ({driver.get('profile_digest') or 'no digest'})")
    nodes = ", ".join(str(n.get("name")) for n in cluster.get("nodes", []) or [])
    out.append(f"- nodes: {nodes or 'unknown'}")
    apis = ", ".join(cluster.get("served_dra_apis", []) or [])
    out.append(f"- served DRA APIs: {apis or 'unknown'}")
    gates = cluster.get("feature_gates", {}) or {}
    on = ", ".join(sorted(k for k, v in gates.items() if v))
    out.append(f"- feature gates on: {on or 'unknown'}")
    out.append(f"- started {run.get('started')}, finished {run.get('finished')}")
    out.append(f"- pytest arguments: `{' '.join(run.get('pytest_args', []))}`")
    out.append("")
    return "\n".join(out)


def write_markdown(run_dir: Path, summary: Mapping[str, Any]) -> Path:
    path = Path(run_dir) / SUMMARY_MD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_markdown(summary), encoding="utf-8")
    return path
