"""Serial vs parallel wall time of the scenario suites on the fake driver, measured in one go.

    python bench/suite_speed.py [--name CLUSTER] [--workers 4] [--out bench/results/suite.json]

Runs `dra-conformance run` twice against the same (already created) kind cluster, serially and
with -n WORKERS, and prints a Markdown table: wall time, speed-up, per-requirement median and
p95 duration, verdicts. The machine is noisy; compare the two numbers of one run, not runs of
different days. Results are recorded in bench/suite.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_suite(cluster: str, workers: str, report: Path, extra: list[str]) -> dict:
    start = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "run",
            "--profile",
            "drivers/fake/profile.yaml",
            "--name",
            cluster,
            "-n",
            workers,
            "--report-dir",
            str(report),
            "--dra-html-report",
            "never",
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - start
    summary = json.loads((report / "summary.json").read_text())
    durations = [r["duration_s"] for r in summary["requirements"] if r.get("duration_s")]
    return {
        "workers": workers,
        "exit_code": result.returncode,
        "wall_s": round(wall, 1),
        "verdict": summary["verdict"],
        "requirements_with_duration": len(durations),
        "median_requirement_s": round(statistics.median(durations), 2) if durations else None,
        "p95_requirement_s": round(sorted(durations)[int(0.95 * (len(durations) - 1))], 2)
        if durations
        else None,
        "statuses": {r["id"]: r["status"] for r in summary["requirements"]},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="dra-conformance", help="kind cluster (must exist)")
    parser.add_argument("--workers", default="4")
    parser.add_argument("--out", default=None, help="write the raw results as JSON here")
    parser.add_argument("extra", nargs="*", help="passed on to `run` (e.g. scenarios/core)")
    args = parser.parse_args()
    base = ROOT / "reports" / f"bench-{time.strftime('%Y%m%d-%H%M%S')}"
    serial = run_suite(args.name, "0", base / "serial", args.extra)
    parallel = run_suite(args.name, args.workers, base / f"n{args.workers}", args.extra)
    same = serial["statuses"] == parallel["statuses"]
    print("| mode | wall | median / p95 per requirement | verdict |")
    print("|---|---|---|---|")
    for r in (serial, parallel):
        mode = "serial" if r["workers"] == "0" else f"-n {r['workers']}"
        print(
            f"| {mode} | {r['wall_s']} s | {r['median_requirement_s']} s / "
            f"{r['p95_requirement_s']} s | {r['verdict']} |"
        )
    print(
        f"\nspeed-up: {serial['wall_s'] / parallel['wall_s']:.2f}x; "
        f"same per-requirement statuses: {same}"
    )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps([serial, parallel], indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
