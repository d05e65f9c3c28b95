"""Reads taken by the test workers (a kubelet right before and after a restart the suite
causes), handed to the process that writes the report through a file of JSON lines: a worker
has no other channel to the controller that outlives it, and a read must reach the totals even
when its test fails."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

from conformance.metrics.parse import MetricsParseError, parse_metrics
from conformance.metrics.scrape import Snapshot

SPOOL_NAME = "kubelet-reads.jsonl"


class ReadSpool:
    def __init__(self, path: Path) -> None:
        self.path = path

    def add(self, snapshot: Snapshot) -> None:
        line = json.dumps(
            {"taken": snapshot.taken, "texts": snapshot.texts, "unavailable": snapshot.unavailable}
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as spool:
            fcntl.flock(spool, fcntl.LOCK_EX)  # workers append at once; lines stay whole
            spool.write(line + "\n")

    def snapshots(self) -> list[Snapshot]:
        """Every read spooled, partial snapshots; a torn or unparsable line is skipped (a
        worker killed mid-write), never a reason to lose the others."""
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                data = json.loads(line)
                snapshot = Snapshot(
                    taken=float(data["taken"]),
                    unavailable=dict(data.get("unavailable") or {}),
                    partial=True,
                )
                for source, text in (data.get("texts") or {}).items():
                    snapshot.sources[source] = parse_metrics(text)
                    snapshot.texts[source] = text
            except (ValueError, KeyError, TypeError, MetricsParseError):
                continue
            out.append(snapshot)
        return out


def spool_in(harness_dir: Path) -> ReadSpool:
    """The run's spool, in its run-private directory (shared by its workers)."""
    return ReadSpool(harness_dir / SPOOL_NAME)
