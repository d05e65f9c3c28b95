"""Which runs against a cluster are alive: one file per running run in the cluster's lease
book (`runs/<run id>.json`: pid and host of its controller), written when the run starts and
removed when it ends. A run killed by SIGKILL leaves its file behind with a dead pid.

Objects labelled with a run id that has no live process are leftovers of a dead run; two live
runs against one cluster are legal, so a run only names another's leftovers, never deletes them.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from conformance.run.lease import pid_alive

RUNS_DIR = "runs"


def _path(book: Path, run_id: str) -> Path:
    return Path(book) / RUNS_DIR / f"{run_id}.json"


def register_run(book: Path, run_id: str) -> None:
    path = _path(book, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"run_id": run_id, "pid": os.getpid(), "host": socket.gethostname()}
    tmp = path.with_suffix(f".tmp.{os.getpid()}")
    tmp.write_text(json.dumps({**record, "started": time.time()}))
    os.replace(tmp, path)


def unregister_run(book: Path, run_id: str) -> None:
    _path(book, run_id).unlink(missing_ok=True)


def _records(book: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted((Path(book) / RUNS_DIR).glob("*.json")):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out


def is_live(record: dict[str, Any], host: str | None = None) -> bool:
    """A run of another host cannot be checked from here: it counts as alive."""
    if record.get("host") != (host or socket.gethostname()):
        return True
    return pid_alive(int(record.get("pid", -1)))


def live_run_ids(book: Path) -> set[str]:
    """The runs registered in `book` whose controller is still alive."""
    return {str(r.get("run_id")) for r in _records(book) if is_live(r)}


def forget_dead_runs(book: Path, run_ids: set[str]) -> None:
    """Drop the files of `run_ids` whose process is gone (after their leftovers were removed)."""
    for record in _records(book):
        if record.get("run_id") in run_ids and not is_live(record):
            unregister_run(book, str(record["run_id"]))
