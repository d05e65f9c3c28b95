"""Serial vs parallel wall time of the whole suite on the fake driver, and a flake check.

    python bench/suite_speed.py --name CLUSTER [--workers 4] [--out FILE] [-- run args]
    python bench/suite_speed.py --name CLUSTER --repeat 5 [--workers 4] [--serial-first]

The first form runs `dra-conformance run` twice against the same (already created, driver
installed) kind cluster, serially and then with -n WORKERS, back to back. The second runs
REPEAT consecutive -n WORKERS runs (with --serial-first, after one serial run, and the ratio
is against the median of the parallel runs). Both print a Markdown table: wall time, the ratio,
per-test p50/p95 of the test body and of the time spent waiting for a device lease (apart, from
summary.json's tests[].body_s and lease_wait_s), and whether every run gave the same
per-requirement statuses (exit 1 if not). The machine is noisy: compare the runs of one
invocation, not runs of different days. Results are recorded by hand in bench/suite.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = q * (len(ordered) - 1)
    low = int(index)
    high = min(low + 1, len(ordered) - 1)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (index - low), 2)


def run_suite(cluster: str, workers: str, report: Path, extra: list[str]) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "conformance.cli",
        "run",
        "--profile",
        "drivers/fake/profile.yaml",
        "--name",
        cluster,
        "--report-dir",
        str(report),
        "--dra-html-report",
        "never",
        *(["-n", workers] if workers != "0" else []),
        *extra,
    ]
    print(f"[bench {time.strftime('%H:%M:%S')}] {' '.join(cmd[3:])}", flush=True)
    start = time.monotonic()
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - start
    summary_path = report / "summary.json"
    if not summary_path.is_file():
        sys.exit(f"run wrote no summary.json (exit {result.returncode}):\n{result.stdout[-3000:]}")
    summary = json.loads(summary_path.read_text())
    tests = summary["tests"]
    bodies = [t["body_s"] for t in tests if t.get("body_s") is not None]
    waits = [t["lease_wait_s"] for t in tests if t.get("lease_wait_s") is not None]
    return {
        "workers": workers,
        "exit_code": result.returncode,
        "wall_s": round(wall, 1),
        "pytest_s": summary["run"]["duration_s"],
        "verdict": summary["verdict"],
        "body_p50_s": percentile(bodies, 0.5),
        "body_p95_s": percentile(bodies, 0.95),
        "lease_wait_p50_s": percentile(waits, 0.5),
        "lease_wait_p95_s": percentile(waits, 0.95),
        "test_p50_s": percentile([t["duration_s"] for t in tests], 0.5),
        "statuses": {r["id"]: r["status"] for r in summary["requirements"]},
        # what was measured on: a run that re-created the cluster would show here
        "nodes": {n["name"]: n["devices"] for n in summary["cluster"].get("nodes", [])},
        "report": str(report),
    }


def table(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| run | wall | body p50 / p95 | lease wait p50 / p95 | test p50 | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs, 1):
        mode = "serial" if r["workers"] == "0" else f"-n {r['workers']}"
        lines.append(
            f"| {i}: {mode} | {r['wall_s']} s | {r['body_p50_s']} / {r['body_p95_s']} s "
            f"| {r['lease_wait_p50_s']} / {r['lease_wait_p95_s']} s | {r['test_p50_s']} s "
            f"| {r['verdict']} |"
        )
    return "\n".join(lines)


def differing(runs: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Requirement -> its status in each run, for those whose status was not always the same."""
    ids = sorted({i for r in runs for i in r["statuses"]})
    out = {}
    for rid in ids:
        seen = [r["statuses"].get(rid, "absent") for r in runs]
        if len(set(seen)) > 1:
            out[rid] = seen
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="kind cluster with the fake driver")
    parser.add_argument("--workers", default="4")
    parser.add_argument(
        "--repeat", type=int, default=0, help="flake check: this many -n WORKERS runs instead"
    )
    parser.add_argument(
        "--serial-first", action="store_true", help="with --repeat: one serial run before them"
    )
    parser.add_argument("--out", default=None, help="write the raw results as JSON here")
    parser.add_argument("extra", nargs="*", help="passed on to `run` (e.g. scenarios/core)")
    args = parser.parse_args()
    base = ROOT / "reports" / f"bench-{time.strftime('%Y%m%d-%H%M%S')}"
    serial_first = args.serial_first or not args.repeat
    runs = [run_suite(args.name, "0", base / "serial", args.extra)] if serial_first else []
    if args.repeat:
        runs += [
            run_suite(args.name, args.workers, base / f"repeat-{i}", args.extra)
            for i in range(1, args.repeat + 1)
        ]
    else:
        runs.append(run_suite(args.name, args.workers, base / f"n{args.workers}", args.extra))
    shapes = {json.dumps(r["nodes"], sort_keys=True) for r in runs}
    print(f"device nodes: {'; '.join(sorted(shapes))}")
    if len(shapes) > 1:
        print("warning: the runs saw different nodes; compare runs of one cluster only")
    print(table(runs))
    if serial_first:
        parallel = statistics.median(r["wall_s"] for r in runs[1:])
        print(f"\nserial / -n {args.workers}: {runs[0]['wall_s'] / parallel:.2f}x")
    diff = differing(runs)
    print(f"differing per-requirement statuses: {len(diff)}")
    for rid, seen in diff.items():
        print(f"  {rid}: {' / '.join(seen)}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(runs, indent=1))
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
