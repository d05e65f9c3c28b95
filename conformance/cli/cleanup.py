"""`dra-conformance cleanup`: remove what a dead run (SIGKILL, a lost CI runner) left on a
cluster: its namespaces, its labelled DeviceTaintRules, DeviceClasses and PriorityClasses, the
cordons of nodes it cordoned, and the faults it injected (through the injectors of the
profile, the bundled one unless `--profile` names another: their `sweep`, and their
`recorded_faults` to find runs that left only faults); and, in the cluster's device lease book,
the leases and run records of holders that stopped renewing.

Exit 0 when nothing of those runs is left afterwards, 1 when something could not be removed
(named), 2 on bad input.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from conformance.errors import ConformanceError
from conformance.suite_root import bundled

DEFAULT_CLUSTER = "dra-conformance"
# The faults of a run made with the bundled driver are undone through its profile's injectors.
DEFAULT_PROFILE = "drivers/fake/profile.yaml"
FaultSweeper = Callable[[str], tuple[list[str], list[str]]]
FaultRuns = Callable[[], tuple[dict[str, int], list[str]]]


def add_cleanup_command(sub: argparse._SubParsersAction) -> None:
    cleanup = sub.add_parser(
        "cleanup",
        help="remove what a dead run left on a cluster (namespaces, labelled objects, "
        "cordons, injected faults)",
    )
    which = cleanup.add_mutually_exclusive_group(required=True)
    which.add_argument("--run-id", default=None, help="the run whose leftovers to remove")
    which.add_argument(
        "--all", action="store_true", help="every run with leftovers and no live process"
    )
    cleanup.add_argument("--name", default=DEFAULT_CLUSTER, help="kind cluster name")
    cleanup.add_argument("--kubeconfig", default=None, help="an existing cluster instead of kind")
    cleanup.add_argument("--context", default=None, help="kubeconfig context (with --kubeconfig)")
    cleanup.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        type=bundled,
        metavar="FILE",
        help=f"undo faults through this profile's injectors (default: {DEFAULT_PROFILE}, "
        "the bundled driver's)",
    )
    cleanup.add_argument(
        "--timeout", type=float, default=180.0, help="seconds to wait for namespaces to go"
    )
    cleanup.set_defaults(func=_cleanup)


def _expired_leases(book: Any) -> list[str]:
    """Remove (by reading the book) the leases whose holders stopped renewing; name them."""
    from conformance.run.lease import scope_text
    from conformance.run.lease_policy import needs_text

    dropped = book.update(lambda state: list(state.dropped))
    return [
        f"{e.holder} ({e.state}, {needs_text(e.needs)}{scope_text(e)}; holder "
        f"{e.owner or e.pid} stopped renewing)"
        for e in dropped
    ]


def _profile_faults(
    args: argparse.Namespace, k8s: Any, served: dict
) -> tuple[FaultRuns, FaultSweeper]:
    """(the runs with recorded faults, the sweeper of a run's faults), through the injectors
    the profile configures: the harness names no driver."""
    from conformance.cli.driver_commands import _load
    from conformance.faults.registry import fault_sweeper, recorded_fault_runs

    profile = _load(args.profile)
    version = next(
        (v for v in ("v1", "v1beta2", "v1alpha3") if f"resource.k8s.io/{v}" in served), None
    )
    context = {
        "kubeconfig": args.kubeconfig,
        "kube_context": args.context,
        "taint_rule_version": version,
    }
    sweeper = fault_sweeper(profile, k8s.api_client, **context)
    return (lambda: recorded_fault_runs(profile, k8s.api_client, **context)), sweeper


def _cleanup(args: argparse.Namespace) -> int:
    from conformance.cli.driver_commands import _target
    from conformance.install import installer
    from conformance.model.naming import is_label_value
    from conformance.run.cluster_lease_book import ClusterLeaseBook
    from conformance.run.context import read_served_resources

    if args.run_id is not None and not is_label_value(args.run_id):
        raise ConformanceError(
            f"--run-id {args.run_id!r} is not a run id (a Kubernetes label value)",
            "pass the id a run printed in its header (dra-conformance: run ID on ...)",
        )
    kubeconfig, context, _ = _target(args)
    k8s = installer.ensure_reachable(kubeconfig, context)
    served = read_served_resources(k8s)
    fault_runs, sweeper = _profile_faults(args, k8s, served)
    book = ClusterLeaseBook(k8s.core)
    try:
        return _sweep(args, k8s, served, fault_runs, sweeper, book)
    finally:
        book.close()


def _sweep(
    args: argparse.Namespace,
    k8s: Any,
    served: dict,
    fault_runs: FaultRuns,
    sweeper: FaultSweeper,
    book: Any,
) -> int:
    from conformance.kube.cleanup import sweep_run
    from conformance.kube.leftovers import find_leftovers
    from conformance.run.live_runs import dead_runs, forget_dead_runs, live_run_ids

    for lease in _expired_leases(book):
        print(f"device lease of {lease}: removed")
    live = live_run_ids(book)
    if args.run_id is not None and args.run_id in live:
        raise ConformanceError(
            f"run {args.run_id} is still running (registered in the cluster's lease book, "
            f"{book!r}, and renewing)",
            "stop it first; a live run removes its own objects when it ends",
        )
    fault_counts, unread = fault_runs()
    problems = [f"the recorded faults: {error}" for error in unread]
    found = find_leftovers(k8s, api_versions=list(served), fault_counts=fault_counts)
    if args.run_id is not None:
        runs = [args.run_id]
    else:
        runs = sorted((set(found) | set(dead_runs(book))) - live)
        for run in sorted(r for r in found if r in live):
            print(f"run {run}: still running, left alone")
    for run in runs:
        result = sweep_run(
            k8s, run, None, timeout=args.timeout, api_versions=list(served), fault_sweeper=sweeper
        )
        counts = result.counts()
        removed = ", ".join(f"{n} {kind}" for kind, n in counts.items()) or "nothing"
        print(f"run {run}: removed {removed}")
        problems += [f"run {run}: {left}" for left in result.leftovers]
    fault_counts, unread = fault_runs()
    problems += [f"the recorded faults: {error}" for error in unread]
    after = find_leftovers(
        k8s, api_versions=list(served), fault_counts=fault_counts, include_terminating=True
    )
    for run in runs:
        left = after.get(run)
        if left is not None and left.names():
            problems.append(f"run {run}: still present: " + ", ".join(left.names()))
    if not runs:
        print("no leftovers of dead runs")
    forget_dead_runs(book, set(runs))
    for problem in dict.fromkeys(problems):
        print(f"dra-conformance: could not remove: {problem}")
    return 1 if problems else 0
