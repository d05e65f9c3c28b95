"""Which runs against a cluster are alive: each run registers in the cluster's lease book when
it starts (its controller process renews the book's heartbeat while it runs) and removes itself
when it ends. A run killed by SIGKILL leaves its record behind, and its heartbeat expires.

Objects labelled with a run id that has no live run are leftovers of a dead run; two live runs
against one cluster are legal, so a run only names another's leftovers, never deletes them.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from conformance.run.lease_book import BookState, LeaseBook


def register_run(book: LeaseBook, run_id: str) -> None:
    record = {
        "owner": book.owner,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.time(),
    }
    book.update(lambda state: state.runs.__setitem__(run_id, record))


def unregister_run(book: LeaseBook, run_id: str) -> None:
    book.update(lambda state: state.runs.pop(run_id, None))


def live_run_ids(book: LeaseBook) -> set[str]:
    """The runs registered in the book whose controller still renews its heartbeat."""
    return book.update(lambda state: {r for r, rec in state.runs.items() if _live(state, rec)})


def dead_runs(book: LeaseBook) -> dict[str, dict[str, Any]]:
    """The registered runs whose controller stopped renewing (killed, or its machine lost)."""
    return book.update(
        lambda state: {r: dict(rec) for r, rec in state.runs.items() if not _live(state, rec)}
    )


def forget_dead_runs(book: LeaseBook, run_ids: set[str]) -> None:
    """Drop the records of `run_ids` that are dead (after their leftovers were removed)."""

    def forget(state: BookState) -> None:
        for run_id in run_ids:
            record = state.runs.get(run_id)
            if record is not None and not _live(state, record):
                del state.runs[run_id]

    book.update(forget)


def _live(state: BookState, record: dict[str, Any]) -> bool:
    return state.alive(str(record.get("owner", "")))
