"""`dra-conformance gate`: does the driver still conform on the next Kubernetes version?

Two runs of the same selection compared requirement by requirement (conformance.report.gate):
either on two kind clusters, --from V1 then --to V2 (one after the other, each deleted after its
run; node images are built once and reused), or a run on a cluster (the staging cluster after
its upgrade, or a kind cluster) against a stored run, --baseline SUMMARY.json. Each run is a
`dra-conformance run` subprocess, so each has its own pytest session and report directory.
With --rehearse, the rehearsal upgrades the V1 cluster once its run is over, as a platform team
upgrades the staging cluster it has just checked, and the V2 run comes after it: one cluster
fewer to create and install the driver on.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from conformance.errors import ConformanceError
from conformance.report.gate_latency import DEFAULT_MIN_SAMPLES, DEFAULT_THRESHOLD


def add_gate_command(sub: argparse._SubParsersAction) -> None:
    gate = sub.add_parser(
        "gate",
        allow_abbrev=False,
        help="compare two runs (two Kubernetes versions, or a run and a stored one)",
        description="Run the selection on Kubernetes --from, then on --to (kind clusters), or "
        "on a cluster against a stored --baseline summary.json, and compare: gate.md and "
        "gate.json list per requirement the outcome on each side (regressions, fixes, newly "
        "applicable). Exit codes: 0 no MUST regressed (a MUST that passed before and fails, "
        "errs or does not run after), 1 one did, 2 usage, or a run (or the baseline) has no "
        "verdict: it could not be set up or was interrupted. Every "
        "other argument goes to both runs' pytest (e.g. scenarios/core, -k EXPR).",
    )
    gate.add_argument("--profile", required=True, metavar="FILE")
    versions = gate.add_argument_group("two kind clusters")
    versions.add_argument("--from", dest="from_version", metavar="V1", help="e.g. v1.36.3")
    versions.add_argument("--to", dest="to_version", metavar="V2", help="e.g. v1.37.2")
    versions.add_argument(
        "--to-profile",
        metavar="FILE",
        help="the --to run's profile (default: --profile): a new version or configuration of "
        "the driver gated with the Kubernetes upgrade; it must name the same driver",
    )
    baseline = gate.add_argument_group("against a stored run")
    baseline.add_argument(
        "--baseline", type=Path, metavar="SUMMARY", help="a run's summary.json (or its directory)"
    )
    baseline.add_argument(
        "--cluster", choices=("kind", "existing"), default="kind", help="where the new run goes"
    )
    baseline.add_argument("--name", default="dra-conformance", help="kind cluster name")
    baseline.add_argument("--kubeconfig", default=None)
    baseline.add_argument("--context", default=None)
    versions.add_argument(
        "--rehearse",
        action="store_true",
        help="then rehearse the upgrade in place: a kind cluster of V1 with the driver and "
        "live claims, upgraded to V2 (control plane, then node by node), judged on the upgrade "
        "suite DRA-UPG-* (scenarios/upgrade); the gate also fails when the rehearsal does",
    )
    latency = gate.add_argument_group("driver operation latency (reported, never judged)")
    latency.add_argument(
        "--latency-threshold",
        type=_percent,
        default=DEFAULT_THRESHOLD * 100,
        metavar="PERCENT",
        help="flag an operation whose p95 latency rose by more than PERCENT (default "
        f"{DEFAULT_THRESHOLD * 100:.0f}); the gate's verdict never depends on it",
    )
    latency.add_argument(
        "--latency-min-samples",
        type=_at_least_one,
        default=DEFAULT_MIN_SAMPLES,
        metavar="N",
        help="compare an operation only when each run made at least N calls of it "
        f"(default {DEFAULT_MIN_SAMPLES})",
    )
    gate.add_argument("-n", "--workers", default="0", metavar="N", help="xdist workers per run")
    gate.add_argument("--report-dir", type=Path, default=None, metavar="DIR")
    gate.add_argument(
        "--allow-disruptive",
        action="store_true",
        help="run disruptive requirements against an existing cluster",
    )
    gate.set_defaults(func=_gate, pytest_args=[])


def _percent(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage above 0 (e.g. 50)")
    return value


def _at_least_one(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def _check(args: argparse.Namespace) -> None:
    two_versions = args.from_version or args.to_version
    if args.baseline and two_versions:
        raise ConformanceError(
            "--baseline and --from/--to are two ways to gate",
            "give either --from V1 --to V2, or --baseline SUMMARY.json",
        )
    if args.baseline is None and not (args.from_version and args.to_version):
        raise ConformanceError(
            "nothing to compare", "give --from V1 --to V2, or --baseline SUMMARY.json"
        )
    if args.rehearse and not (args.from_version and args.to_version):
        raise ConformanceError(
            "--rehearse upgrades a kind cluster of --from to --to",
            "give --from V1 --to V2 with --rehearse",
        )
    if args.to_profile:
        if not args.to_version:
            raise ConformanceError(
                "--to-profile is the profile of the --to run", "give it with --from V1 --to V2"
            )
        _same_driver(args.profile, args.to_profile)
    if args.baseline is not None and not args.baseline.exists():
        raise ConformanceError(
            f"baseline {args.baseline} does not exist", "pass a run's summary.json"
        )


def _same_driver(profile: str, to_profile: str) -> None:
    """Both sides of a gate measure one driver: a profile of another would compare nothing."""
    from conformance.model.profile_parse import load_profile

    drivers = [load_profile(Path(p)).driver for p in (profile, to_profile)]
    if drivers[0] != drivers[1]:
        raise ConformanceError(
            f"--profile is for driver {drivers[0]}, --to-profile for {drivers[1]}",
            "give --to-profile a profile of the same driver (its new version or configuration)",
        )


def _run(
    args: argparse.Namespace,
    report_dir: Path,
    cluster: list[str],
    *,
    workers: str | None = None,
    selection: list[str] | None = None,
    profile: str | None = None,
) -> Path:
    """One `dra-conformance run` into report_dir; its summary.json (exit 2 if none)."""
    argv = [
        sys.executable,
        "-m",
        "conformance.cli",
        "run",
        "--profile",
        profile or args.profile,
        "--report-dir",
        str(report_dir),
        "-n",
        str(workers if workers is not None else args.workers),
        *cluster,
        *(["--allow-disruptive"] if args.allow_disruptive else []),
        *(selection if selection is not None else args.pytest_args),
    ]
    started = time.monotonic()
    print(f"dra-conformance gate: {' '.join(argv[3:])}", flush=True)
    code = subprocess.call(argv)
    summary = report_dir / "summary.json"
    print(
        f"dra-conformance gate: run ended with exit {code} after "
        f"{time.monotonic() - started:.0f} s",
        flush=True,
    )
    if not summary.is_file():
        raise ConformanceError(
            f"the run into {report_dir} wrote no summary (exit {code})",
            "see its output above; fix what it names and run the gate again",
        )
    return summary


def _judged(path: Path, what: str) -> dict[str, Any]:
    """A summary with a verdict to compare; one without (a run that could not be set up, was
    interrupted, ...) stops the gate with exit 2 and why."""
    from conformance.report import gate

    try:
        summary = gate.load_summary(path)
    except ValueError as exc:
        raise ConformanceError(str(exc), "pass a run's summary.json") from None
    reason = gate.no_verdict(summary)
    if reason is not None:
        raise ConformanceError(
            f"{what} {path}: {reason}",
            "fix what it names and run it again; a run without a verdict gates nothing",
        )
    return summary


def _cluster_name(version: str) -> str:
    return "dra-gate-" + version.lstrip("v").replace(".", "-").lower()


def _kind_cluster(version: str, *, keep: bool = False) -> list[str]:
    cluster = ["--cluster", "kind", "--name", _cluster_name(version), "--k8s", version]
    return cluster + ["--keep-cluster", "yes" if keep else "no"]


def _gate(args: argparse.Namespace) -> int:
    from conformance.report import gate
    from conformance.report.facts import new_run_id

    _check(args)
    report_dir = (args.report_dir or Path("reports") / f"gate-{new_run_id()}").resolve()
    rehearsal = None
    if args.baseline is not None:
        before_summary = _judged(args.baseline, "baseline")
        before = gate.side_of(before_summary, label=f"baseline {args.baseline.name}")
        cluster = ["--cluster", args.cluster, "--name", args.name]
        cluster += ["--kubeconfig", args.kubeconfig] if args.kubeconfig else []
        cluster += ["--context", args.context] if args.context else []
        after_summary = _judged(_run(args, report_dir / "after", cluster), "the run")
        after = gate.side_of(after_summary)
    else:
        try:
            before_path = _run(
                args,
                report_dir / args.from_version,
                _kind_cluster(args.from_version, keep=args.rehearse),
            )
            if args.rehearse:
                rehearsal = _rehearse(args, report_dir / "rehearsal")
        finally:
            if args.rehearse:  # the rehearsal deletes it; not when it did not get that far
                _delete_kind_cluster(_cluster_name(args.from_version), args.from_version)
        after_path = _run(
            args,
            report_dir / args.to_version,
            _kind_cluster(args.to_version),
            profile=args.to_profile,
        )
        before_summary, after_summary = (_judged(p, "the run") for p in (before_path, after_path))
        before, after = gate.side_of(before_summary), gate.side_of(after_summary)
    result = gate.compare(before, after)
    if rehearsal is not None:
        result = replace(result, rehearsal=rehearsal)
    result = _with_latency(args, result, before_summary, after_summary, report_dir)
    markdown, _ = gate.write(result, report_dir)
    print(markdown.read_text(), end="")
    print(f"dra-conformance gate: {'PASS' if result.passed else 'FAIL'}; report in {report_dir}")
    return result.exit_code


def _with_latency(
    args: argparse.Namespace,
    result: Any,
    before: dict[str, Any],
    after: dict[str, Any],
    report_dir: Path,
) -> Any:
    """The latency comparison and its chart; a chart that cannot be drawn is a warning."""
    from conformance.report.charts import write_gate_chart
    from conformance.report.gate_latency import compare_latency

    latency = compare_latency(
        before.get("driver_operations"),
        after.get("driver_operations"),
        threshold=args.latency_threshold / 100,
        min_samples=args.latency_min_samples,
    )
    try:
        chart = write_gate_chart(report_dir, latency, (result.before.label, result.after.label))
    except Exception as exc:  # noqa: BLE001 - matplotlib's errors are many; none stops a gate
        print(f"dra-conformance gate: warning: latency chart not drawn: {exc}", file=sys.stderr)
        chart = None
    return replace(result, latency=latency, latency_chart=chart.name if chart else None)


def _rehearse(args: argparse.Namespace, report_dir: Path) -> Any:
    """The upgrade suite on the kind cluster of --from that the gate's first run kept (created
    again if that run left it unhealthy), upgraded in place to --to and deleted after; one
    worker (the suite is one journey on one cluster)."""
    from conformance.report import gate
    from conformance.suite_root import SUITE_ROOT

    cluster = _kind_cluster(args.from_version) + ["--dra-upgrade-to", args.to_version]
    suite = str(SUITE_ROOT / "scenarios" / "upgrade")
    summary = _run(args, report_dir, cluster, workers="0", selection=[suite])
    return gate.rehearsal_of(_judged(summary, "the rehearsal"), args.from_version, args.to_version)


def _delete_kind_cluster(name: str, version: str) -> None:
    """Delete the named kind cluster if it is still there (kind's delete is a no-op if not)."""
    from conformance.cluster import kind
    from conformance.progress import Progress

    cluster = kind.cluster_for(name, 1, version, True, Progress())
    if cluster.exists():
        print(f"dra-conformance gate: deleting kind cluster {name}", flush=True)
        cluster.delete()
