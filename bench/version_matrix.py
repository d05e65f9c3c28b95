"""The version matrix: the whole suite (or a selection) on each Kubernetes release, one table.

    python bench/version_matrix.py [--profile FILE] [--versions V ...] [-n 4] [--out FILE]
                                   [-- selection]
    python bench/version_matrix.py --combine A.json B.json ...

For each version, one `dra-conformance run` on a fresh kind cluster of that version (created,
run, deleted; node images are built on first use and reused), one after the other: the machine
has 2 cores. Then a Markdown table: per requirement its level and outcome on each version, with
the reason of every outcome that is neither passed nor not applicable beneath it, and a head
row per version with the verdict, the counts and the wall time. Exit 1 when a version's run
wrote no summary. --combine prints one table from the --out files of several invocations
(versions whose images were built at different times). Results are recorded by hand in
bench/cluster.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VERSIONS = ("v1.35.4", "v1.36.3", "v1.37.2", "v1.38.0-beta.0")
SHORT = {"passed": "pass", "failed": "FAIL", "error": "ERROR", "not-run": "NOT RUN"}


def cluster_name(version: str) -> str:
    return "dra-matrix-" + version.lstrip("v").replace(".", "-").lower()


def run_version(
    version: str, profile: str, workers: str, report: Path, selection: list[str]
) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "conformance.cli",
        "run",
        "--profile",
        profile,
        "--cluster",
        "kind",
        "--name",
        cluster_name(version),
        "--k8s",
        version,
        "--keep-cluster",
        "no",
        "--report-dir",
        str(report),
        "--dra-html-report",
        "never",
        "-n",
        workers,
        *selection,
    ]
    print(f"[matrix {time.strftime('%H:%M:%S')}] {' '.join(cmd[3:])}", flush=True)
    start = time.monotonic()
    code = subprocess.call(cmd, cwd=ROOT)
    wall = round(time.monotonic() - start, 1)
    print(f"[matrix {time.strftime('%H:%M:%S')}] {version}: exit {code} in {wall} s", flush=True)
    summary_path = report / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else None
    return {"version": version, "exit_code": code, "wall_s": wall, "summary": summary}


def outcomes(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in summary.get("requirements") or ()}


def table(runs: list[dict[str, Any]]) -> str:
    """Requirements as rows, versions as columns; a version without a summary shows '—'."""
    per_version = [outcomes(r["summary"]) if r["summary"] else {} for r in runs]
    ids = sorted({i for o in per_version for i in o})
    head = "| requirement | level | " + " | ".join(r["version"] for r in runs) + " |"
    lines = [head, "|---|---|" + "---|" * len(runs)]
    totals = []
    for run, found in zip(runs, per_version, strict=True):
        if run["summary"] is None:
            totals.append(f"no summary (exit {run['exit_code']})")
            continue
        counts = Counter(r["status"] for r in found.values())
        parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        totals.append(f"{run['summary'].get('verdict')}: {parts}; {run['wall_s']:.0f} s")
    lines.append("| **run** | | " + " | ".join(totals) + " |")
    notes = []
    for rid in ids:
        level = next((o[rid].get("level", "") for o in per_version if rid in o), "")
        cells = []
        for run, found in zip(runs, per_version, strict=True):
            status = found[rid]["status"] if rid in found else "—"
            cells.append(SHORT.get(status, status))
            if status not in ("passed", "not-applicable", "—"):
                reason = (found[rid].get("reason") or "").splitlines()[:1]
                notes.append(f"- {rid} on {run['version']}: {status}: {''.join(reason)}")
        lines.append(f"| {rid} | {level} | " + " | ".join(cells) + " |")
    return "\n".join(lines + ([""] + notes if notes else []))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="drivers/fake/profile.yaml")
    parser.add_argument("--versions", nargs="+", default=list(VERSIONS), metavar="V")
    parser.add_argument("-n", "--workers", default="4")
    parser.add_argument("--out", default=None, help="write the raw results as JSON here")
    parser.add_argument("--combine", nargs="+", type=Path, metavar="JSON", help="--out files")
    parser.add_argument("selection", nargs="*", help="passed on to `run` (e.g. scenarios/core)")
    args = parser.parse_args()
    if args.combine:
        runs = [run for path in args.combine for run in json.loads(path.read_text())]
        print(table(runs))
        return 1 if any(r["summary"] is None for r in runs) else 0
    base = ROOT / "reports" / f"matrix-{time.strftime('%Y%m%d-%H%M%S')}"
    runs = [
        run_version(v, args.profile, args.workers, base / v, args.selection) for v in args.versions
    ]
    print(table(runs))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(runs, indent=1))
    return 1 if any(r["summary"] is None for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
