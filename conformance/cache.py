"""The shared build cache: where it lives, how its entries are keyed, and the lock that keeps
two processes (two terminals, parallel CI jobs, pytest workers) from building into the same
entry at once: the second waits, then reuses what the first built."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from filelock import FileLock, Timeout

# Bump when the way an artefact is assembled changes, so old cache entries are not reused.
BUILDER_REVISION = "1"


CACHE_ENV = "DRA_CONFORMANCE_CACHE"


def cache_root() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dra-conformance"
    )
    return Path(base)


def digest(*parts: object) -> str:
    text = json.dumps([BUILDER_REVISION, *parts], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# A waiter says so at once, then every HEARTBEAT_S while the holder builds.
HEARTBEAT_S = 30.0


def _stderr_note(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def _ago(seconds: float) -> str:
    minutes, secs = divmod(int(max(seconds, 0)), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@dataclass(frozen=True)
class LockHolder:
    """Who holds a build lock: written beside it by the holder, read by whoever waits."""

    pid: int
    command: str
    what: str
    started: float
    doing: str = "being built"

    def describe(self, now: float) -> str:
        return f"pid {self.pid} ({self.command}, started {_ago(now - self.started)} ago)"

    @classmethod
    def read(cls, path: Path) -> LockHolder | None:
        try:
            data = json.loads(path.read_text())
            fields = (int(data["pid"]), str(data["command"]), str(data["what"]), data["started"])
            return cls(*fields, str(data.get("doing") or "being built"))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # not written yet, or being replaced


def _command_line() -> str:
    text = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "python"
    return text if len(text) <= 120 else text[:117] + "..."


def _alive(pid: int) -> bool:
    """Whether `pid` runs; a zombie (dead, its parent has not reaped it yet) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def waiting_line(what: str, holder: LockHolder | None, now: float) -> str:
    """What a waiter waits for, as the holder says it (it knows what it does), and who holds it."""
    if holder is None:
        return f"waiting for {what} being built by another process"
    return f"waiting for {holder.what} {holder.doing} by {holder.describe(now)}"


def _wait_for(lock: FileLock, sidecar: Path, what: str, note: Callable[[str], None]) -> None:
    """Acquire `lock`, saying what it waits for and who holds it, then a heartbeat line; a
    holder that dies releases the lock (the OS closes its file), which the next line says."""
    started = time.monotonic()
    holder = LockHolder.read(sidecar)
    note(waiting_line(what, holder, time.time()))
    while True:
        try:
            lock.acquire(timeout=HEARTBEAT_S)
            break
        except Timeout:
            holder = LockHolder.read(sidecar) or holder
            waited = _ago(time.monotonic() - started)
            gone = f"; pid {holder.pid} is gone" if holder and not _alive(holder.pid) else ""
            note(f"still {waiting_line(what, holder, time.time())} (waited {waited}{gone})")
    # A holder that finished removed its sidecar before releasing; one still there is a dead's.
    dead = LockHolder.read(sidecar)
    if dead is not None and not _alive(dead.pid):
        note(
            f"pid {dead.pid} ({dead.command}) died while building {what}: the OS released "
            f"its lock after {_ago(time.monotonic() - started)}; going on here"
        )
    else:
        note(f"{what}: the lock is free after {_ago(time.monotonic() - started)}")


@contextlib.contextmanager
def build_lock(
    name: str,
    what: str | None = None,
    note: Callable[[str], None] | None = None,
    doing: str = "being built",
) -> Iterator[None]:
    """Hold the cache lock `name` while `what` (default: the name) is `doing`. Whoever waits
    for it prints what it waits for and who holds it (`note`: a Progress's note; default
    stderr)."""
    what = what or name
    note = note or _stderr_note
    path = cache_root() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    sidecar = path.with_name(f"{name}.holder.json")
    lock = FileLock(path)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        _wait_for(lock, sidecar, what, note)
    try:
        mine = LockHolder(os.getpid(), _command_line(), what, time.time(), doing)
        sidecar.write_text(json.dumps(asdict(mine)))
        yield
    finally:
        with contextlib.suppress(OSError):
            sidecar.unlink()
        lock.release()
