"""A lease book in a directory under a file lock: the test double of the cluster's book, for
tests of the broker's rules across real processes without an API server. Holders are processes
of this host: a dead pid is a dead holder. Not selectable by a run."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock

from conformance.run.lease_book import (
    BookState,
    drop_dead,
    pid_alive,
    state_from_json,
    state_to_json,
)

T = TypeVar("T")

STATE_FILE = "leases.json"
JOURNAL_FILE = "journal.jsonl"


def _alive(owner: str) -> bool:
    host, pid = ([*owner.split("/"), ""])[:2]
    return host != socket.gethostname() or (pid.isdigit() and pid_alive(int(pid)))


class FileLeaseBook:
    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.state_file = self.directory / STATE_FILE
        self.journal_file = self.directory / JOURNAL_FILE
        self.lock = FileLock(self.directory / "leases.lock")

    @property
    def owner(self) -> str:
        return f"{socket.gethostname()}/{os.getpid()}"  # the pid of a forked child, too

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FileLeaseBook) and other.directory == self.directory

    def __hash__(self) -> int:
        return hash(self.directory)

    def close(self) -> None:
        pass

    def update(self, change: Callable[[BookState], T]) -> T:
        with self.lock:
            try:
                raw: dict[str, Any] = json.loads(self.state_file.read_text())
            except (FileNotFoundError, ValueError):
                raw = {}
            state = state_from_json(raw)
            state.alive = _alive
            drop_dead(state)
            result = change(state)
            after = state_to_json(state)
            if after != raw:
                tmp = self.state_file.with_suffix(f".tmp.{os.getpid()}")
                tmp.write_text(json.dumps(after, indent=1, sort_keys=True))
                os.replace(tmp, self.state_file)
            if state.journal:
                with open(self.journal_file, "a") as journal:
                    journal.writelines(json.dumps(line) + "\n" for line in state.journal)
            return result


CONFTEST = """
import sys
from pathlib import Path

sys.path.insert(0, {harness!r})
from helpers.file_lease_book import FileLeaseBook


def pytest_dra_lease_book(config, context):
    return FileLeaseBook(Path(__file__).parent / "leases")
"""


def use_file_lease_book(root: Path) -> None:
    """A conftest.py in `root` that gives a run of the plugin there (and its xdist workers)
    this double instead of a cluster's book."""
    (root / "conftest.py").write_text(CONFTEST.format(harness=str(Path(__file__).parents[1])))
