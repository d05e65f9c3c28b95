"""`summary.json`: the machine-readable result of one run (schema dra-conformance.io/summary/v1).

The document is built from plain inputs (run info, facts, catalog, test records) so it can be
tested without pytest, and every other human-facing file (summary.md, Allure environment) is
rendered from this document rather than from the inputs.

    schema            "dra-conformance.io/summary/v1" (additive changes only within v1)
    run               id, started, finished (UTC ISO 8601), duration_s, pytest_args,
                      xdist_workers (0 = not distributed), exit_status (pytest's), report_dir,
                      python
    driver            name, profile_path, profile_digest ("sha256:..."), capabilities[],
                      fault_kinds[] (what the profile can inject); images[] {container, image,
                      image_id, digest ("sha256:..."), pods[] (namespace/name)}: what the
                      driver's pods run, as the kubelet reports it; images_error (why images
                      is empty, else null); install {method: "helm", chart, version,
                      image, applied} | {method: "manifests", image, manifests[] {path,
                      sha256}, applied} | {method: "preinstalled"} (null: unknown): applied
                      true: the run's install applied them (sha256 of each file's text with
                      the image substituted, image: the reference it substituted); false: the
                      driver was there before the run, the profile's files hashed as read
                      (the image substituted when the profile names it); profile_text
                      (credentials redacted)
                      Local paths in run and driver are portable: relative to the
                      suite's root or the working directory, or ~/... (report/paths.py)
    cluster           provider, name, kubernetes_version, nodes[] (the nodes the profile
                      selects: {name, devices, kubelet_version, container_runtime_version,
                      os_image, kernel_version} from Node.status.nodeInfo, and on a kind
                      cluster node_image {ref, image_id, repo_digests[], built_here}: what its
                      node container runs, as Docker reports it), nodes_error (why some of
                      that could not be read, else null), feature_gates {gate: bool},
                      served_dra_apis[], build_notes[] (how a kind cluster built here differs
                      from upstream's build)
    setup_problem     what kept the run from testing the driver (e.g. "the driver never
                      became ready: ..."), null when nothing did
    verdict           "CONFORMANT" | "PASSED-PARTIAL" | "NON-CONFORMANT" | "INCOMPLETE" |
                      "NO-VERDICT" (conformance/report/verdict.py); only CONFORMANT certifies
    verdict_text      the verdict as every format shows it, e.g. "PASSED (partial: 3 of 39
                      MUST selected) — not a certification", "NO VERDICT"
    verdict_reasons[] why not conformant (empty when CONFORMANT): each MUST that failed,
                      errored or did not run, with what would make it run, and each that
                      failed with a known platform issue (its link); the MUSTs a partial run
                      did not select; "no verdict: <why>"
    verdict_scope     suites and requirement IDs the verdict covers, null = every suite
    verdict_basis     "MUST", or "selected" for a partial run with no MUST in its selection
                      (judged on every selected requirement)
    partial           {selected, total, not_selected[]}: the MUSTs that apply to the
                      cluster's version (total), how many the scope selected and the IDs it
                      left out; null when the run selected every one (or has no scope)
    no_verdict_reason why the run has no verdict (NO-VERDICT only, else null): it has not
                      finished (the report directory is fenced with this when a run starts),
                      could not be set up, was interrupted, or pytest broke
    no_verdict_detail the error behind it with its remedy, on one line, or null
    exit_code         what `dra-conformance run` exits with: 0 CONFORMANT or PASSED-PARTIAL,
                      1 NON-CONFORMANT, 2 NO-VERDICT, 3 INCOMPLETE
    counts            tests {total, passed, failed, error, not_applicable, not_run};
                      requirements {total, passed, failed, error, not_applicable, not_run,
                      known_platform_issue, by_level {MUST|SHOULD|MAY: {same keys}}} (those
                      in the verdict scope)
    capabilities_seen {capability: {declared, observed, requirements[]}}
                      (conformance/report/capabilities_seen.py)
    requirements[]    {id, level, suite, statement, status (passed|failed|error|
                      not-applicable|not-run|known-platform-issue), duration_s, reason, remedy,
                      tests[] (node ids), known_issue ({link, summary, versions} of a known
                      platform issue of the cluster's version, else null), harness_error
                      (an error only the harness or the cluster caused: INCOMPLETE, never
                      the driver's), min_version ("1.36", null: every version),
                      feature_gates[] (the cluster's gates it needs, from the catalog)}
    known_platform_issues[]  {id, level, status, link, summary, versions, showed,
                      not_run}: every known issue (scenarios/known_issues.yaml) of the
                      cluster's version for a reported requirement; showed = its test failed
                      (a pass: it did not); not_run = why its test was not run on this version
                      (it would break the tests beside it), else null
    tests[]           {nodeid, outcome (passed|failed|error|not-applicable|not-run),
                      duration_s (set-up + body + teardown), body_s (the test body; null
                      if it never ran), lease_wait_s (waiting for the device lease; null
                      without one), reason, remedy, worker, start, stop (epoch seconds:
                      set-up began, teardown ended; null when unknown), requirements[],
                      driver_calls[] {method, calls, errors, mean_s, p95, nodes[]}: the
                      kubelet's gRPC calls to the driver on the test's nodes while it ran
                      (other tests' too on a shared node; null: not measured),
                      driver_calls_shared_with (how many other tests' windows overlapped
                      its own on one of those nodes; null: not measured), diagnostics
                      (diagnostics/<test> relative to the run dir, null: none collected)}
    performance       metrics {name: {unit "s", count, p50, p95, min, max, mean}},
                      requirement_duration_s {unit, count, p50, p95, min, max, mean} | null,
                      test_body_s, lease_wait_s: the same statistics over tests[] | null
    inventory         {key: JSON value} added by tests and the plugin (not judged)
    driver_operations what Kubernetes measured of the driver between the run's start and end
                      (conformance/metrics/operations.py): window, sources {source: "read" |
                      "not available (why)"}, grpc[] {driver, method, count, errors, mean_s,
                      p50, p95, p99 ({le: s} | {gt: s}: bucket estimates)}, kubelet_operations[],
                      scheduler[] (null: not read), claims_in_use, claim_controller[],
                      reads {whole, around_restarts}, counter_resets[] (each restart a source's
                      counters were summed across), timeline {points[] {t_s, prepare,
                      unprepare, errors, claims_in_use}}, unavailable {section: why a section
                      has no figures; for a component, the arguments that let a run read it};
                      or {not_available: why}; null: not measured (no harness)
    cluster_inventory claims {state: n, total} and pools[] {driver, pool, devices, allocated,
                      free, tainted} at the end of the run (conformance/metrics/inventory.py);
                      or {not_available: why}; null: not measured
    artifacts         summary_json, summary_md, junit_xml, allure_results, allure_report,
                      evidence (paths relative to the run dir; null when not produced)
    collection_problems[]  tests outside the suite that claimed a requirement (each keeps the
                      verdict from CONFORMANT)
    provenance        suite_version, catalog / known_issues {path, sha256}, scenarios {path,
                      sha256, files}, profile {path, sha256}, kubernetes_version,
                      cluster_provider, command_line[] (conformance/report/provenance.py)
    modified          true when the run did not use the suite's own catalog, known issues or
                      scenario tree, ran tests from outside it, or had no harness: "modified
                      suite — not a certification"; modified_reasons[] say why

JUnit agreement: counts.tests.total/failed/error equal junit.xml's tests/failures/errors, and
not_run + not_applicable equals its skipped (a test whose call fails *and* whose teardown errors
is one failed test here, two testcases in JUnit).
"""

from __future__ import annotations

import json
import platform
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.model.known_issues import KnownIssue, affecting
from conformance.observe.redact import redact_text
from conformance.report.call_sharing import with_sharing
from conformance.report.capabilities_seen import capabilities_seen
from conformance.report.catalog import RequirementInfo
from conformance.report.evidence import diagnostics_of
from conformance.report.facts import RunFacts
from conformance.report.metrics import aggregate_metrics, describe
from conformance.report.outcomes import TestOutcome, TestRecord, foreign_claims
from conformance.report.partial import partial_selection
from conformance.report.paths import portable, portable_path
from conformance.report.verdict import (
    INTERRUPTED_REASON,
    RequirementStatus,
    decide_verdict,
    mark_modified,
    requirement_results,
    verdict_text,
)

SCHEMA = "dra-conformance.io/summary/v1"
SUMMARY_JSON = "summary.json"


@dataclass
class RunInfo:
    id: str
    started: float  # epoch seconds
    finished: float
    pytest_args: list[str] = field(default_factory=list)
    xdist_workers: int = 0  # 0: not distributed
    exit_status: int = 0
    interrupted: bool = False
    report_dir: str = ""


def iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def build_summary(
    *,
    run: RunInfo,
    facts: RunFacts | None,
    catalog: Mapping[str, RequirementInfo],
    records: Iterable[TestRecord],
    catalog_error: str | None = None,
    session_metrics: Iterable[dict[str, Any]] = (),
    inventory: Mapping[str, Any] | None = None,
    artifacts: Mapping[str, Any] | None = None,
    verdict_scope: Iterable[str] | None = None,
    known_issues: Iterable[KnownIssue] = (),
    no_verdict_reason: str = "",
    no_verdict_detail: str = "",
    provenance: Mapping[str, Any] | None = None,
    driver_operations: Mapping[str, Any] | None = None,
    cluster_inventory: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    records = list(records)
    facts = facts or RunFacts()
    scope = None if verdict_scope is None else sorted(set(verdict_scope))
    version = facts.kubernetes_version
    issues = affecting(known_issues, version)
    stopped = no_verdict_reason or (INTERRUPTED_REASON if run.interrupted else "")
    results = requirement_results(
        catalog, records, scope, issues, stopped=stopped, declared=facts.capabilities
    )
    collection_errors = sum(1 for r in records if r.collect_error)
    partial = partial_selection(catalog, scope, version)
    problems = foreign_claims(records)
    verdict = decide_verdict(
        results,
        catalog_error=catalog_error,
        collection_errors=collection_errors,
        interrupted=run.interrupted,
        no_verdict=no_verdict_reason,
        partial=partial,
        problems=problems,
    )
    if (provenance or {}).get("modified"):
        verdict = mark_modified(verdict, (provenance or {}).get("modified_reasons") or [])
    partial_dict = None if partial is None else partial.to_dict()
    return {
        "schema": SCHEMA,
        "run": _run_section(run),
        "driver": _driver_section(facts),
        "cluster": _cluster_section(facts),
        "setup_problem": facts.setup_problem or None,
        "verdict": verdict.verdict,
        "verdict_text": verdict_text(verdict.verdict, partial_dict),
        "verdict_reasons": verdict.reasons,
        "unmodified_verdict": verdict.unmodified or None,
        "verdict_scope": scope,  # suites and IDs the verdict covers; null = all
        "verdict_basis": verdict.basis,  # MUST | selected (a partial run with no MUST in it)
        "partial": partial_dict,
        "no_verdict_reason": verdict.no_verdict_reason or None,
        "no_verdict_detail": (no_verdict_detail or None) if verdict.no_verdict_reason else None,
        "exit_code": verdict.exit_code,
        "counts": {
            "tests": count_tests(records),
            # what the verdict judged: a scoped run does not count the rest as "not run"
            "requirements": count_requirements([r for r in results if r.in_scope]),
        },
        "capabilities_seen": capabilities_seen(catalog, results, records, facts.capabilities),
        "requirements": [
            r.to_dict() | {"feature_gates": list(getattr(catalog.get(r.id), "feature_gates", ()))}
            for r in results
        ],
        "known_platform_issues": _known_issues(results),
        "tests": _tests(records, run.report_dir),
        "performance": _performance(results, records, session_metrics),
        "inventory": _merged_inventory(records, inventory),
        "driver_operations": None if driver_operations is None else dict(driver_operations),
        "cluster_inventory": None if cluster_inventory is None else dict(cluster_inventory),
        "artifacts": dict(artifacts or {}),
        "collection_problems": problems,
        # provenance, modified, modified_reasons (conformance/report/provenance.py)
        **dict(provenance or {"provenance": None, "modified": False, "modified_reasons": []}),
    }


def _tests(records: list[TestRecord], report_dir: str) -> list[dict[str, Any]]:
    return with_sharing(
        [
            r.to_dict()
            | {"requirements": r.requirements, "diagnostics": diagnostics_of(report_dir, r.nodeid)}
            for r in records
        ]
    )


def _run_section(run: RunInfo) -> dict[str, Any]:
    return {
        "id": run.id,
        "started": iso(run.started),
        "finished": iso(run.finished),
        "duration_s": round(max(0.0, run.finished - run.started), 3),
        "pytest_args": [portable(redact_text(a)) for a in run.pytest_args],
        "xdist_workers": run.xdist_workers,
        "exit_status": run.exit_status,
        "report_dir": portable_path(run.report_dir),
        "python": platform.python_version(),
    }


def _driver_section(facts: RunFacts) -> dict[str, Any]:
    return {
        "name": facts.driver_name or None,
        "profile_path": portable_path(facts.profile_path) or None,
        "profile_digest": facts.profile_digest or None,
        "capabilities": sorted(facts.capabilities),
        "fault_kinds": list(facts.fault_kinds),
        "images": [dict(i) for i in facts.driver_images],
        "images_error": facts.driver_images_error or None,
        "install": _install_section(facts.driver_install),
        "profile_text": portable(facts.profile_text) or None,
    }


def _install_section(install: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the driver was installed from, its manifests' paths made portable."""
    if not install:
        return None
    section = dict(install)
    if "manifests" in section:
        section["manifests"] = [
            {**m, "path": portable_path(str(m.get("path", "")))} for m in section["manifests"]
        ]
    return section


def _cluster_section(facts: RunFacts) -> dict[str, Any]:
    return {
        "provider": facts.cluster_provider or None,
        "name": facts.cluster_name or None,
        "kubernetes_version": facts.kubernetes_version or None,
        "nodes": [dict(n) for n in facts.nodes],
        "nodes_error": facts.nodes_error or None,
        "feature_gates": dict(sorted(facts.feature_gates.items())),
        "served_dra_apis": sorted(facts.served_dra_apis),
        "build_notes": list(facts.build_notes),
    }


def _performance(
    results: Iterable[Any], records: list[TestRecord], session_metrics: Iterable[dict[str, Any]]
) -> dict[str, Any]:
    samples = [m for r in records for m in r.metrics] + list(session_metrics)
    return {
        "metrics": aggregate_metrics(samples),
        "requirement_duration_s": _requirement_durations(results),
        "test_body_s": _described(r.body_s for r in records),
        "lease_wait_s": _described(r.lease_wait_s for r in records),
    }


def _merged_inventory(
    records: Iterable[TestRecord], inventory: Mapping[str, Any] | None
) -> dict[str, Any]:
    """What the tests added, then the plugin's own (which wins on a shared key)."""
    merged: dict[str, Any] = {}
    for record in records:
        merged.update(record.inventory)
    merged.update(inventory or {})
    return merged


def count_tests(records: Iterable[TestRecord]) -> dict[str, int]:
    """Per test item: total and a count per outcome (JUnit skipped = not_run + not_applicable)."""
    counter = Counter(r.outcome for r in records)
    counts = {"total": sum(counter.values())}
    for outcome in TestOutcome:
        counts[outcome.value.replace("-", "_")] = counter.get(outcome, 0)
    return counts


def count_requirements(results: Iterable[Any]) -> dict[str, Any]:
    results = list(results)
    counts: dict[str, Any] = {"total": len(results)}
    for status in RequirementStatus:
        counts[status.value.replace("-", "_")] = sum(1 for r in results if r.status is status)
    counts["by_level"] = {}
    for level in ("MUST", "SHOULD", "MAY"):
        of_level = [r for r in results if r.level == level]
        entry = {"total": len(of_level)}
        for status in RequirementStatus:
            entry[status.value.replace("-", "_")] = sum(1 for r in of_level if r.status is status)
        counts["by_level"][level] = entry
    return counts


def _known_issues(results: Iterable[Any]) -> list[dict[str, Any]]:
    known = RequirementStatus.KNOWN_PLATFORM_ISSUE
    return [
        {
            "id": r.id,
            "level": r.level,
            "status": str(r.status),
            "link": r.known_issue.link,
            "summary": r.known_issue.summary,
            "versions": r.known_issue.versions,
            "showed": r.status is known,
            "not_run": r.known_issue.disrupts,
        }
        for r in results
        if r.known_issue is not None and r.ran
    ]


def _requirement_durations(results: Iterable[Any]) -> dict[str, Any] | None:
    ran = (
        RequirementStatus.PASSED,
        RequirementStatus.FAILED,
        RequirementStatus.ERROR,
        RequirementStatus.KNOWN_PLATFORM_ISSUE,
    )
    return _described(r.duration_s for r in results if r.status in ran and r.tests)


def _described(values: Iterable[float | None]) -> dict[str, Any] | None:
    present = [v for v in values if v is not None]
    return {"unit": "s", **describe(present)} if present else None


def write_summary(run_dir: Path, summary: Mapping[str, Any]) -> Path:
    path = Path(run_dir) / SUMMARY_JSON
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
