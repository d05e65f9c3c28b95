"""Flake and leak check: N consecutive whole-suite runs with -n 4 on one cluster.

    python bench/soak.py --name CLUSTER [--runs 10] [--workers 4] [--out FILE] [-- run args]

Runs `dra-conformance run` (fake driver, already installed on the kind cluster CLUSTER) RUNS
times back to back. After each run it waits for the run's namespaces to finish terminating
and then counts what is left: what any run labelled (namespaces, cluster-scoped objects such
as DeviceTaintRules and PriorityClasses, cordons, faults injected into the fake driver; found
by conformance.kube.leftovers), the run's ResourceClaims, and, cluster-wide, unschedulable
nodes, node taints that were not there before the first run, and device taints in the
driver's ResourceSlices. It prints one Markdown row per run and the requirements whose status
differed between runs; exit 1 on any differing status or leak. Results are recorded by hand
in bench/suite.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from fakedriver.client.channel import FakeDriverControl
from suite_speed import ROOT, differing, run_suite
from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from conformance.cluster.kind import kubeconfig_path
from conformance.kube.client import K8sClients, load_clients
from conformance.kube.leftovers import find_leftovers
from conformance.model.naming import RUN_LABEL

DRIVER = "fake.dra-conformance.io"


def node_taints(k8s: K8sClients) -> set[str]:
    return {
        f"{n.metadata.name}:{t.key}:{t.effect}"
        for n in k8s.core.list_node().items
        for t in (n.spec.taints or [])
    }


def left_by(k8s: K8sClients, run_id: str, baseline_taints: set[str]) -> dict[str, list[str]]:
    """Everything of the run still on the cluster, and cluster state no run should leave."""
    faults = Counter(run for run in FakeDriverControl(k8s.core).read_records().values() if run)
    # The harness's own leftovers finder (namespaces, labelled cluster objects in whatever API
    # version the cluster serves, cordons, faults), for every run: a leftover of any is a leak.
    labelled = find_leftovers(k8s, fault_counts=faults, include_terminating=True)
    selector = f"{RUN_LABEL}={run_id}"
    claims = k8s.resource.list_resource_claim_for_all_namespaces(label_selector=selector)
    slices = k8s.resource.list_resource_slice().items
    return {
        "labelled leftovers": [name for left in labelled.values() for name in left.names()],
        "claims": [f"{c.metadata.namespace}/{c.metadata.name}" for c in claims.items],
        "unschedulable nodes": [
            n.metadata.name for n in k8s.core.list_node().items if n.spec.unschedulable
        ],
        "new node taints": sorted(node_taints(k8s) - baseline_taints),
        "device taints": [
            f"{s.spec.pool.name}/{d.name}"
            for s in slices
            if s.spec.driver == DRIVER
            for d in (s.spec.devices or [])
            if d.taints
        ],
    }


def leaks_after(k8s: K8sClients, run_id: str, baseline: set[str]) -> dict[str, list[str]]:
    """What is left once terminating namespaces had 120 s to go (empty lists dropped)."""
    settle = retry(
        retry=retry_if_result(lambda left: any(left.values())),
        stop=stop_after_delay(120),
        wait=wait_fixed(5),
        retry_error_callback=lambda state: state.outcome.result(),
    )
    left = settle(left_by)(k8s, run_id, baseline)
    return {kind: names for kind, names in left.items() if names}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="kind cluster with the fake driver")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--workers", default="4")
    parser.add_argument("--out", default=None, help="write the raw results as JSON here")
    parser.add_argument("extra", nargs="*", help="passed on to `run`")
    args = parser.parse_args()
    k8s = load_clients(str(kubeconfig_path(args.name)))
    baseline = node_taints(k8s)
    base = ROOT / "reports" / f"soak-{time.strftime('%Y%m%d-%H%M%S')}"
    runs: list[dict[str, Any]] = []
    print("| run | wall | verdict | passed | leaks |\n|---|---|---|---|---|", flush=True)
    for i in range(1, args.runs + 1):
        run_id = f"soak{i}-{time.strftime('%H%M%S')}"
        run = run_suite(
            args.name, args.workers, base / f"run-{i}", ["--run-id", run_id, *args.extra]
        )
        run["run_id"] = run_id
        run["leaks"] = leaks_after(k8s, run_id, baseline)
        runs.append(run)
        passed = sum(1 for s in run["statuses"].values() if s == "passed")
        leaks = "; ".join(f"{k}: {', '.join(v)}" for k, v in run["leaks"].items()) or "0"
        print(
            f"| {i} | {run['wall_s']} s | {run['verdict']} | {passed}/{len(run['statuses'])} "
            f"| {leaks} |",
            flush=True,
        )
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(runs, indent=1))
    diff = differing(runs)
    leaky = [r["run_id"] for r in runs if r["leaks"]]
    print(f"differing per-requirement statuses: {len(diff)}; runs with leaks: {len(leaky)}")
    for rid, seen in diff.items():
        print(f"  {rid}: {' / '.join(seen)}")
    return 1 if diff or leaky else 0


if __name__ == "__main__":
    sys.exit(main())
