"""Where the wall time of one run went: each test's body on its xdist worker, over time.

    python bench/timeline.py REPORT_DIR [JOURNAL]

Reads REPORT_DIR/summary.json (worker, lease wait, body and total per test) and
REPORT_DIR/allure-results (when each body started and stopped) and prints, per worker, one
line per test: body start and end in seconds since the first body started, the lease wait
before it, and the gap since the previous test of that worker ended (its set-up and the
previous teardown). The tail of a run and the tests that queue behind a lease show up here.
With JOURNAL (the lease book's journal, kept in the cluster: `kubectl -n dra-conformance get
configmap dra-conformance-lease-journal -o jsonpath='{.data.journal}' > journal.jsonl`), also
the node each test's lease got and how long after its body the lease was released (the
node's restore, the claims' deallocation); and the lease time by
scope with the chain of leases that exclude each other: an estimate of the wall time no
schedule on these nodes goes below, counting cluster-wide and cluster-scope leases and
whole-node leases that also take devices off their node one at a time, the other whole-node
leases one per node at once.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def load(report_dir: Path) -> list[dict[str, Any]]:
    summary = json.loads((report_dir / "summary.json").read_text())
    by_nodeid = {t["nodeid"]: t for t in summary["tests"]}
    rows = []
    for path in (report_dir / "allure-results").glob("*-result.json"):
        result = json.loads(path.read_text())
        labels = {label["name"]: label["value"] for label in result.get("labels", [])}
        test = next(
            (t for n, t in by_nodeid.items() if n.endswith("::" + result["name"])),
            None,
        )
        if test is None or "start" not in result:
            continue
        rows.append(
            {
                "worker": test.get("worker") or labels.get("thread", "?"),
                "start": result["start"] / 1000,
                "stop": result["stop"] / 1000,
                "lease_wait_s": test.get("lease_wait_s"),
                "requirement": ",".join(test.get("requirements") or []),
                "name": result["name"],
            }
        )
    return rows


def add_leases(rows: list[dict[str, Any]], journal: Path, nodeids: dict[str, str]) -> None:
    """Each row's lease node and release time: the journal's last grant of the test's node id
    before its body started and the first release after its body stopped (the book is the
    cluster's, so it holds other runs of the same test too)."""
    if not rows or not journal.is_file():
        return
    events: dict[str, list[dict[str, Any]]] = {}
    for line in journal.read_text().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        events.setdefault(event.get("holder", ""), []).append(event)
    for row in rows:
        seen = events.get(nodeids.get(row["name"], ""), [])
        grants = [e for e in seen if e["event"] == "grant" and e["t"] <= row["start"] + 1]
        releases = [e for e in seen if e["event"] == "release" and e["t"] >= row["stop"] - 1]
        grant = max(grants, key=lambda e: e["t"]) if grants else None
        release = min(releases, key=lambda e: e["t"]) if releases else None
        row["node"] = (grant or {}).get("node") or (grant or {}).get("scope", "")
        row["released"] = release["t"] if release else None
        if grant is not None and release is not None:
            row["held_s"] = release["t"] - grant["t"]
            row["scope"] = grant.get("scope", "?")
            row["spans"] = row["scope"] == "whole" and bool(grant.get("needs"))


def lease_chain(rows: list[dict[str, Any]]) -> str:
    """Lease time by scope, and the chain of leases that exclude each other (see above)."""
    held = [r for r in rows if "held_s" in r]
    if not held:
        return ""
    by_scope: dict[str, float] = {}
    for r in held:
        by_scope[r["scope"]] = by_scope.get(r["scope"], 0.0) + r["held_s"]
    spanning = sum(r["held_s"] for r in held if r["spans"])
    nodes = {r["node"] for r in held if r["scope"] == "whole"} or {"-"}
    alone = by_scope.get("cluster", 0.0) + by_scope.get("exclusive", 0.0) + spanning
    paired = (by_scope.get("whole", 0.0) - spanning) / len(nodes)
    scopes = ", ".join(f"{scope} {seconds:.0f} s" for scope, seconds in sorted(by_scope.items()))
    return (
        f"lease time by scope: {scopes} (whole-node with devices off the node {spanning:.0f} s)\n"
        f"chain of leases that exclude each other on {len(nodes)} node(s): {alone + paired:.0f} s "
        f"({alone:.0f} s one at a time + {paired:.0f} s of whole-node leases side by side)"
    )


def render(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no test bodies found"
    t0 = min(r["start"] for r in rows)
    with_leases = any("node" in r for r in rows)
    head = "worker  start    end  lease   gap  requirement      "
    lines = [head + ("node                 after  " if with_leases else "") + "test"]
    for worker in sorted({r["worker"] for r in rows}):
        previous_end = t0
        for r in sorted((r for r in rows if r["worker"] == worker), key=lambda r: r["start"]):
            start, end = r["start"] - t0, r["stop"] - t0
            lease = r["lease_wait_s"]
            node = ""
            if with_leases:
                after = "-" if r.get("released") is None else f"{r['released'] - r['stop']:.0f}"
                node = f"{(r.get('node') or '-')[-20:]:20} {after:>5}  "
            lines.append(
                f"{worker:6} {start:6.0f} {end:6.0f} "
                f"{'-' if lease is None else f'{lease:.0f}':>5} {start - previous_end:5.0f}  "
                f"{r['requirement']:16} {node}{r['name'][:60]}"
            )
            previous_end = end
    last = max(r["stop"] for r in rows) - t0
    body = sum(r["stop"] - r["start"] for r in rows)
    lines.append(f"last body ends at {last:.0f} s; bodies add up to {body:.0f} s")
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    report_dir = Path(sys.argv[1])
    if not (report_dir / "summary.json").is_file():
        print(f"{report_dir}: no summary.json; pass a run's report directory", file=sys.stderr)
        return 2
    rows = load(report_dir)
    if len(sys.argv) == 3:
        summary = json.loads((report_dir / "summary.json").read_text())
        nodeids = {t["nodeid"].split("::")[-1]: t["nodeid"] for t in summary["tests"]}
        journal = Path(sys.argv[2])
        add_leases(rows, journal / "journal.jsonl" if journal.is_dir() else journal, nodeids)
    print(render(rows))
    if chain := lease_chain(rows):
        print(chain)
    return 0


if __name__ == "__main__":
    sys.exit(main())
