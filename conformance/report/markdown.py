"""`summary.md`: the human-readable summary, rendered from summary.json's content only."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.report.capabilities_seen import markdown_section as capabilities_section
from conformance.report.dra_gates import gates_line
from conformance.report.driver_markdown import (
    charts_section,
    cluster_inventory_section,
    driver_operations_section,
)
from conformance.report.markdown_first import cell as _cell
from conformance.report.markdown_first import (
    failures_section,
    first_step_section,
    level_text,
    reasons_lines,
)
from conformance.report.node_facts import build_lines
from conformance.report.per_test_calls import per_test_calls_section
from conformance.report.provenance import MODIFIED_MARK
from conformance.report.provenance import markdown_section as provenance_section

SUMMARY_MD = "summary.md"

_STATUS_MARK = {
    "passed": "PASS",
    "failed": "FAIL",
    "error": "ERROR",
    "not-applicable": "N/A",
    "not-run": "NOT RUN",
    "known-platform-issue": "KNOWN ISSUE",
}


def _seconds(value: Any) -> str:
    return f"{float(value):.1f} s" if isinstance(value, int | float) else ""


def must_counts(must: Mapping[str, Any]) -> str:
    """ "3 passed, 1 failed, ... (of 31)" for one level's counts."""
    parts = [
        f"{must.get(key, 0)} {key.replace('_', ' ')}"
        for key in ("passed", "failed", "error", "not_applicable", "not_run")
    ]
    if must.get("known_platform_issue"):
        parts.append(f"{must['known_platform_issue']} known platform issue")
    return ", ".join(parts) + f" (of {must.get('total', 0)})"


def render_markdown(summary: Mapping[str, Any]) -> str:
    out: list[str] = []
    # The verdict, what failed and what to do first; then the detail.
    for section in (
        _headline,
        reasons_lines,
        failures_section,
        first_step_section,
        _overview,
        _requirements_table,
        capabilities_section,
        _not_run_section,
        _not_applicable_section,
        lambda s: _known_issues_section(s.get("known_platform_issues") or []),
        _performance_section,
        driver_operations_section,
        per_test_calls_section,
        cluster_inventory_section,
        charts_section,
        _run_section,
        provenance_section,
    ):
        out.extend(section(summary))
    return "\n".join(out)


def _headline(summary: Mapping[str, Any]) -> list[str]:
    """The verdict and what kind of run gave it (no verdict, not set up, scoped, partial)."""
    verdict = summary.get("verdict", "INCOMPLETE")
    mark = f" — {MODIFIED_MARK}" if summary.get("modified") else ""
    if summary.get("unmodified_verdict"):  # MODIFIED says it in the verdict's own words
        mark = f" (its tests alone: {summary['unmodified_verdict']})"
    out = [f"# DRA conformance: **{summary.get('verdict_text') or verdict}**{mark}", ""]
    out.extend(_no_verdict_lines(summary))
    if summary.get("setup_problem"):
        out += [f"**No test ran: {_cell(summary['setup_problem'])}**", ""]
    scope = summary.get("verdict_scope")
    if scope:
        out += [f"Verdict scope: {', '.join(scope)} only (partial, not a certification).", ""]
    out.extend(_partial_lines(summary.get("partial")))
    if summary.get("verdict_basis") == "selected":
        out.append(
            "The selection holds no MUST requirement: the verdict judges the selected "
            "requirements of every level."
        )
        out.append("")
    return out


def _overview(summary: Mapping[str, Any]) -> list[str]:
    """Driver, cluster and run in one line; the MUST counts; the test counts."""
    run, driver = summary.get("run", {}), summary.get("driver", {})
    cluster, counts = summary.get("cluster", {}), summary.get("counts", {})
    must = counts.get("requirements", {}).get("by_level", {}).get("MUST", {})
    if (
        summary.get("no_verdict_reason")
        and not driver.get("name")
        and not counts.get("requirements", {}).get("total")
    ):
        return [f"Run `{run.get('id')}`: nothing has been judged yet.", ""]
    out = [
        "## Overview",
        "",
        f"Driver `{driver.get('name') or 'unknown'}` on Kubernetes "
        f"`{cluster.get('kubernetes_version') or 'unknown'}` "
        f"({cluster.get('provider') or 'unknown'} cluster) — run `{run.get('id')}`, "
        f"{_seconds(run.get('duration_s'))}, "
        f"{run.get('xdist_workers') or 'no'} xdist workers.",
    ]
    for note in cluster.get("build_notes") or ():
        out += ["", f"Cluster built here with a stand-in: {_cell(note)}."]
    out += ["", f"MUST requirements: {must_counts(must)}."]
    tests = counts.get("tests", {})
    shown = ", ".join(
        f"{tests.get(k, 0)} {k.replace('_', '-')}"
        for k in ("passed", "failed", "error", "not_applicable", "not_run")
    )
    return [*out, "", f"Tests: {shown} (total {tests.get('total', 0)}).", ""]


def _requirements_table(summary: Mapping[str, Any]) -> list[str]:
    out = ["## Requirements", "", "| ID | level | suite | status | duration | reason |"]
    out.append("|---|---|---|---|---|---|")
    for req in summary.get("requirements", []):
        reason = req.get("reason") or ""
        if req.get("remedy"):
            reason += f" — to run it: {req['remedy']}"
        out.append(
            f"| {_cell(req.get('id'))} | {_cell(level_text(req))} | {_cell(req.get('suite'))} "
            f"| {_STATUS_MARK.get(req.get('status'), _cell(req.get('status')))} "
            f"| {_seconds(req.get('duration_s')) if req.get('tests') else ''} "
            f"| {_cell(reason)} |"
        )
    out.append("")
    return out


def _not_run_section(summary: Mapping[str, Any]) -> list[str]:
    not_run = [r for r in summary.get("requirements", []) if r.get("status") == "not-run"]
    out = ["## Not run", ""]
    stopped = bool(summary.get("no_verdict_reason"))
    if not not_run:
        return [] if stopped else [*out, "Every selected requirement ran.", ""]
    if stopped:
        out += ["The run stopped before these ran; with no verdict, they decide nothing.", ""]
    else:
        out.append("These apply to the driver but did not run; a MUST among them keeps the")
        out += ["verdict INCOMPLETE until it runs.", ""]
    for r in not_run:
        remedy = f" To run it: {_cell(r['remedy'])}." if r.get("remedy") else ""
        out.append(f"- **{r['id']}** ({r['level']}): {_cell(r['reason'])}.{remedy}")
    out.append("")
    return out


def _not_applicable_section(summary: Mapping[str, Any]) -> list[str]:
    reqs = summary.get("requirements", [])
    not_applicable = [r for r in reqs if r.get("status") == "not-applicable"]
    out = ["## Not applicable", ""]
    if not not_applicable:
        return [*out, "Every requirement applied to this driver and cluster.", ""]
    out.extend(f"- **{r['id']}** ({r['level']}): {_cell(r['reason'])}" for r in not_applicable)
    out.append("")
    return out


def _performance_section(summary: Mapping[str, Any]) -> list[str]:
    """The harness's own timings: per requirement, per test body, lease waits, figures."""
    performance = summary.get("performance", {})
    metrics = performance.get("metrics", {})
    out = ["## Performance", ""]
    per_req = performance.get("requirement_duration_s")
    if per_req:
        out.append(
            f"Time per requirement: p50 {_seconds(per_req['p50'])}, "
            f"p95 {_seconds(per_req['p95'])}, max {_seconds(per_req['max'])} "
            f"over {per_req['count']} requirements."
        )
        out.append("")
    body, lease = performance.get("test_body_s"), performance.get("lease_wait_s")
    if body:
        waited = (
            f"; waiting for a device lease p50 {_seconds(lease['p50'])}, "
            f"p95 {_seconds(lease['p95'])}"
            if lease
            else ""
        )
        out.append(
            f"Test body alone: p50 {_seconds(body['p50'])}, p95 {_seconds(body['p95'])}{waited}."
        )
        out.append("")
    if not metrics:
        return [*out, "No performance figures were recorded.", ""]
    out += ["| figure | count | p50 | p95 | min | max |", "|---|---|---|---|---|---|"]
    for name, m in metrics.items():
        out.append(
            f"| {_cell(name)} | {m['count']} | {m['p50']:.3f} s | {m['p95']:.3f} s "
            f"| {m['min']:.3f} s | {m['max']:.3f} s |"
        )
    out.append("")
    return out


def _run_section(summary: Mapping[str, Any]) -> list[str]:
    run, driver, cluster = (
        summary.get("run", {}),
        summary.get("driver", {}),
        summary.get("cluster", {}),
    )
    out = ["## Run", ""]
    profile = driver.get("profile_path") or "unknown"
    out.append(f"- profile: `{profile}` ({driver.get('profile_digest') or 'no digest'})")
    if driver.get("profile_text"):
        out.append("  - its text is in summary.json (`driver.profile_text`), credentials redacted")
    out.extend(_driver_images_lines(driver))
    out.extend(_install_lines(driver))
    out.append(f"- capabilities: {', '.join(driver.get('capabilities') or []) or 'none'}")
    out.append(f"- fault kinds: {', '.join(driver.get('fault_kinds') or []) or 'none'}")
    nodes = ", ".join(str(n.get("name")) for n in cluster.get("nodes", []) or [])
    out.append(f"- nodes: {nodes or 'unknown'}")
    out.extend(build_lines(cluster))
    apis = ", ".join(cluster.get("served_dra_apis", []) or [])
    out.append(f"- served DRA APIs: {apis or 'unknown'}")
    out.append(gates_line(summary))
    out.append(f"- started {run.get('started')}, finished {run.get('finished')}")
    out.append(f"- pytest arguments: `{' '.join(run.get('pytest_args', []))}`")
    out.append("")
    return out


def image_reference(entry: Mapping[str, Any]) -> str:
    """`image@sha256:...` of one summary.json `driver.images` entry (the image as the kubelet
    named it, pinned to the digest it ran)."""
    image, digest = str(entry.get("image") or "?"), entry.get("digest")
    if not digest:
        return image
    return image if image.endswith(f"@{digest}") else f"{image}@{digest}"


def _driver_images_lines(driver: Mapping[str, Any]) -> list[str]:
    """The driver's images as the kubelet ran them (a summary without them shows nothing)."""
    if "images" not in driver:
        return []
    images = driver.get("images") or []
    if not images:
        why = driver.get("images_error") or "not read"
        return [f"- driver images: none ({_cell(why)})"]
    out = ["- driver images (as the kubelet ran them):"]
    for entry in images:
        pods = entry.get("pods") or []
        started = "" if entry.get("digest") else "; not started, no digest"
        out.append(
            f"  - `{image_reference(entry)}` (container `{_cell(entry.get('container'))}`, "
            f"{len(pods)} pod{'' if len(pods) == 1 else 's'}{started})"
        )
    return out


def _install_lines(driver: Mapping[str, Any]) -> list[str]:
    """What the driver was installed from: Helm chart, manifest digests, or preinstalled."""
    install = driver.get("install")
    if not install:
        return []
    method = install.get("method")
    if install.get("error"):
        return [f"- installed with {method}: not described ({_cell(install['error'])})"]
    # applied: what this run's install applied; false: the driver was there before the run
    before = " (installed before the run)" if install.get("applied") is False else ""
    image = install.get("image")
    if method == "helm":
        version = install.get("version") or "unpinned"
        with_image = f" with image `{image}`" if image else ""
        return [
            f"- installed from Helm chart `{install.get('chart')}` version `{version}`"
            f"{with_image}{before}"
        ]
    if method == "manifests":
        substituted = f"with `{image}` for the image placeholder" if image else ""
        if install.get("applied"):
            how = " as applied" + (f", {substituted}" if substituted else "")
        else:
            how = f" {substituted}" if substituted else ", as read"
        out = [f"- installed from manifests (sha256 of each file{how}){before}:"]
        out.extend(
            f"  - `{_cell(m.get('path'))}` {m.get('sha256')}"
            for m in install.get("manifests") or []
        )
        return out
    return [f"- driver {_cell(method)} (installed by other means than the suite)"]


def write_markdown(run_dir: Path, summary: Mapping[str, Any]) -> Path:
    path = Path(run_dir) / SUMMARY_MD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_markdown(summary), encoding="utf-8")
    return path


def _no_verdict_lines(summary: Mapping[str, Any]) -> list[str]:
    """Why a run has no verdict: what ran below decides nothing."""
    reason = summary.get("no_verdict_reason")
    if not reason:
        return []
    out = [f"**No verdict: {_cell(reason)}.**"]
    if summary.get("no_verdict_detail"):
        out.append("")
        out.append(f"Error: {_cell(summary['no_verdict_detail'])}")
    out += ["", "What is reported below (if anything) decides nothing.", ""]
    return out


def _partial_lines(partial: Mapping[str, Any] | None) -> list[str]:
    """The applicable MUSTs a scoped run did not select: why it is not a certification."""
    if not partial:
        return []
    missing = ", ".join(partial.get("not_selected") or ())
    return [
        f"Partial run: {partial['selected']} of {partial['total']} MUST requirements that apply "
        f"to this Kubernetes version were selected. Not selected: {missing}.",
        "",
    ]


def _known_issues_section(issues: list[Mapping[str, Any]]) -> list[str]:
    """Known platform issues of the cluster's version: shown or not, never hidden."""
    if not issues:
        return []
    out = ["## Known platform issues", ""]
    out.append(
        "Upstream Kubernetes bugs of this cluster's version (scenarios/known_issues.yaml). A "
        "requirement that failed with one is not met (never CONFORMANT) but not blamed on the "
        "driver; a pass means the issue did not show."
    )
    out.append("")
    for issue in issues:
        if issue.get("not_run"):
            shown = f"was not run: {_cell(issue['not_run'])}"
        elif issue.get("showed"):
            shown = "failed with it"
        else:
            shown = f"{issue.get('status')}: it did not show"
        out.append(
            f"- **{issue['id']}** ({issue['level']}) {shown} — [{issue['link']}]({issue['link']}): "
            f"{_cell(issue['summary'])} (Kubernetes {issue['versions']})"
        )
    out.append("")
    return out
