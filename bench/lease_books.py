"""The cluster's lease book against the file book: whole-suite wall time, side by side.

    python bench/lease_books.py --name CLUSTER [--pairs 2] [--workers 4] [--out FILE] [-- run args]
    python bench/lease_books.py --summarize FILE

Runs `dra-conformance run` (fake driver, already installed on the kind cluster CLUSTER) with
-n WORKERS, alternately with the cluster's lease book (ConfigMaps in namespace dra-conformance)
and with the file book (`tests/helpers/file_lease_book.py`, given by `file_book_plugin.py`
through the `pytest_dra_lease_book` hook): cluster, file, cluster, file, ... PAIRS of each.
Before each run it waits for the previous run's namespaces to go and for every node mark
(no kubelet restart before T) in either book to expire, so every run starts from the same
state. Per run it records the load average at its start, the suite's wall time (pytest) and
the command's, the machine-wide CPU (/proc/stat), the test bodies' p50/p95 (how slow the
machine was, leases apart), pass/fail counts and the verdict. A run that is not CONFORMANT,
or whose per-requirement statuses differ from the other runs', is reported and left out of
the medians. The ratio is median(cluster) / median(file) of the
suite's wall time; the target is at most 1.10. --out is rewritten after every run, and
--summarize prints the table of such a file (of an interrupted bench, too). Exit 1 when a run
is left out or the ratio is above 1.10. Results are recorded by hand in bench/lease_books.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from file_book_plugin import DIR_ENV, FileLeaseBook
from kubernetes.client.exceptions import ApiException
from soak import leaks_after, node_taints
from suite_speed import ROOT, differing, run_suite

from conformance.cluster.kind import kubeconfig_path
from conformance.kube.client import K8sClients, load_clients
from conformance.run.cluster_lease_book import CONFIG_MAP, NAMESPACE
from conformance.run.lease_book import state_from_json
from conformance.run.node_marks import active_marks

TARGET = 1.10
BENCH = Path(__file__).resolve().parent


def cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine since boot; guest time is inside user."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def marks_end(k8s: K8sClients, file_book: FileLeaseBook) -> float:
    """When the last live node mark of either book ends (0 if none). The cluster's book is
    only read: a heartbeat of the bench's own would be one more holder in it."""
    ends = [m.until for m in active_marks(file_book)]
    try:
        config_map = k8s.core.read_namespaced_config_map(CONFIG_MAP, NAMESPACE)
    except ApiException as exc:
        if exc.status != 404:
            raise
    else:
        state = state_from_json(json.loads((config_map.data or {}).get("book") or "{}"))
        ends += [float(state.marks[n]["until"]) for n in state.marked]
    return max(ends, default=0.0)


def one_run(
    name: str, book: str, index: int, workers: str, base: Path, extra: list[str]
) -> dict[str, Any]:
    run_id = f"books{index}-{book}-{time.strftime('%H%M%S')}"
    plugin = ["-p", "file_book_plugin"] if book == "file" else []
    load = os.getloadavg()
    busy0, total0 = cpu_jiffies()
    started = time.strftime("%H:%M:%S")
    try:
        run = run_suite(
            name, workers, base / f"{index}-{book}", ["--run-id", run_id, *plugin, *extra]
        )
    except SystemExit as exc:  # no summary.json: report it, go on with the next run
        run = {"verdict": "NO SUMMARY", "error": str(exc)[-2000:], "statuses": {}}
    busy1, total1 = cpu_jiffies()
    cores = os.cpu_count() or 1
    return {
        **run,
        "index": index,
        "book": book,
        "run_id": run_id,
        "started": started,
        "load_at_start": [round(v, 2) for v in load],
        "cpu_cores_busy": round(cores * (busy1 - busy0) / max(total1 - total0, 1), 2),
    }


def counted(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The CONFORMANT runs with the statuses most CONFORMANT runs had, and those statuses."""
    good = [r for r in runs if r["verdict"] == "CONFORMANT" and r.get("exit_code") == 0]
    shapes = Counter(json.dumps(r["statuses"], sort_keys=True) for r in good)
    if not shapes:
        return [], {}
    common = json.loads(shapes.most_common(1)[0][0])
    return [r for r in good if r["statuses"] == common], common


def summary(runs: list[dict[str, Any]]) -> tuple[str, bool]:
    kept, common = counted(runs)
    lines = [
        "| run | book | start | load at start | suite (pytest) | command | CPU busy "
        "| test body p50 / p95 | passed / failed / other | verdict | counted |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        tally = Counter(r["statuses"].values())
        other = sum(tally.values()) - tally["passed"] - tally["failed"]
        lines.append(
            f"| {r['index']} | {r['book']} | {r['started']} | {r['load_at_start'][0]} "
            f"| {r.get('pytest_s', '-')} s | {r.get('wall_s', '-')} s "
            f"| {r['cpu_cores_busy']} cores | {r.get('body_p50_s')} / {r.get('body_p95_s')} s "
            f"| {tally['passed']} / {tally['failed']} / {other} "
            f"| {r['verdict']} | {'yes' if r in kept else 'NO'} |"
        )
    diff = differing(runs)
    lines.append(f"\nstatuses: {len(common)} requirements; differing between runs: {len(diff)}")
    lines += [f"  {rid}: {' / '.join(seen)}" for rid, seen in diff.items()]
    medians = {
        book: statistics.median(r["pytest_s"] for r in kept if r["book"] == book)
        for book in ("cluster", "file")
        if any(r["book"] == book for r in kept)
    }
    ok = len(kept) == len(runs) and len(medians) == 2
    if len(medians) == 2:
        ratio = medians["cluster"] / medians["file"]
        walls = {
            book: statistics.median(r["wall_s"] for r in kept if r["book"] == book)
            for book in medians
        }
        within = ratio <= TARGET
        ok = ok and within
        lines.append(
            f"median suite wall: cluster {medians['cluster']:.1f} s, file {medians['file']:.1f} s"
            f" -> cluster/file {ratio:.3f} ({'within' if within else 'NOT within'} 10%); "
            f"command wall {walls['cluster'] / walls['file']:.3f}"
        )
    else:
        lines.append("no ratio: a side has no counted run")
    return "\n".join(lines), ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", help="kind cluster with the fake driver")
    parser.add_argument("--pairs", type=int, default=2, help="runs with each book")
    parser.add_argument("--workers", default="4")
    parser.add_argument("--out", default=None, help="the raw results as JSON, after every run")
    parser.add_argument("--summarize", default=None, help="print the table of such a JSON")
    parser.add_argument("extra", nargs="*", help="passed on to `run`")
    args = parser.parse_args()
    if args.summarize:
        text, ok = summary(json.loads(Path(args.summarize).read_text()))
        print(text)
        return 0 if ok else 1
    if not args.name:
        parser.error("--name is required")
    # the runs' pytest (and its xdist workers) import the plugin from here; both sides get it
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(BENCH), str(ROOT), os.environ.get("PYTHONPATH")) if p
    )
    base = ROOT / "reports" / f"lease-books-{time.strftime('%Y%m%d-%H%M%S')}"
    # one file book for every file run, as it was one per cluster on the runner's disk
    file_dir = base / "file-book"
    os.environ[DIR_ENV] = str(file_dir)
    file_book = FileLeaseBook(file_dir)
    k8s = load_clients(str(kubeconfig_path(args.name)))
    baseline = node_taints(k8s)
    runs: list[dict[str, Any]] = []
    for index in range(1, 2 * args.pairs + 1):
        wait = marks_end(k8s, file_book) - time.time()
        if wait > 0:
            print(f"[bench] waiting {wait:.0f} s for node marks to expire", flush=True)
            time.sleep(wait + 1)
        run = one_run(
            args.name, ("cluster", "file")[(index - 1) % 2], index, args.workers, base, args.extra
        )
        # the namespaces go in the background: the next run must not pay for this one's
        run["left_behind"] = leaks_after(k8s, run["run_id"], baseline)
        runs.append(run)
        tally = Counter(run["statuses"].values())
        print(
            f"[bench] run {index} ({run['book']} book): suite {run.get('pytest_s')} s, command "
            f"{run.get('wall_s')} s, load {run['load_at_start'][0]}, CPU {run['cpu_cores_busy']} "
            f"cores, {dict(tally)}, {run['verdict']}, left behind: {run['left_behind'] or 0}",
            flush=True,
        )
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(runs, indent=1))
    text, ok = summary(runs)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
