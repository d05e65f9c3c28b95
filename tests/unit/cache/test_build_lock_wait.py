"""A build lock's waiter says what it waits for and who holds it, then a heartbeat, and
notices a holder that died: two real processes on one lock file."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cache import LockHolder, waiting_line

ROOT = Path(__file__).resolve().parents[3]

# The holder keeps the lock until the test says "go" (its stdin), then for argv[1] seconds: on a
# loaded machine a waiter can take seconds to start, so no fixed sleep decides who waits.
HOLDER = """
import sys, time
from conformance.cache import build_lock
with build_lock("dra-test", "the test image"):
    print("held", flush=True)
    sys.stdin.readline()
    time.sleep(float(sys.argv[1]))
"""

WAITER = """
import conformance.cache as cache
cache.HEARTBEAT_S = 0.5
with cache.build_lock("dra-test", "the test image"):
    print("acquired", flush=True)
"""


def _start(script: str, tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "DRA_CONFORMANCE_CACHE": str(tmp_path), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def _hold(tmp_path: Path, seconds: float) -> subprocess.Popen[str]:
    holder = _start(HOLDER, tmp_path, str(seconds))
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def _release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.write("go\n")
    holder.stdin.flush()


def _first_line(waiter: subprocess.Popen[str]) -> str:
    """The waiter's first stderr line: it is waiting once it has said so."""
    assert waiter.stderr is not None
    return waiter.stderr.readline()


def test_a_waiter_names_the_holder_at_once_then_beats(tmp_path: Path) -> None:
    holder = _hold(tmp_path, 1.6)
    waiter = _start(WAITER, tmp_path)
    first = _first_line(waiter)
    _release(holder)
    out, rest = waiter.communicate(timeout=120)
    holder.wait(timeout=30)
    err = first + rest
    lines = err.splitlines()
    assert f"waiting for the test image being built by pid {holder.pid} (-c " in lines[0]
    assert re.search(r"started \d+s ago\)", lines[0]), lines[0]
    beats = [ln for ln in lines if "still waiting for the test image" in ln]
    assert len(beats) >= 2, err
    assert "the lock is free after" in lines[-1] and "died" not in err
    assert out.strip() == "acquired"


def test_a_dead_holder_is_noticed(tmp_path: Path) -> None:
    holder = _hold(tmp_path, 600)
    waiter = _start(WAITER, tmp_path)
    first = _first_line(waiter)
    holder.send_signal(signal.SIGKILL)
    out, rest = waiter.communicate(timeout=120)
    err = first + rest
    holder.wait(timeout=30)
    assert f"pid {holder.pid} (-c " in err
    assert "died while building the test image: the OS released its lock" in err, err
    assert out.strip() == "acquired"


def test_the_holder_file_is_gone_after_the_build(tmp_path: Path) -> None:
    holder = _hold(tmp_path, 0)
    sidecar = tmp_path / "locks" / "dra-test.holder.json"
    written = LockHolder.read(sidecar)  # while held
    assert written is not None and written.pid == holder.pid and written.what == "the test image"
    _release(holder)
    holder.wait(timeout=30)
    assert not sidecar.exists()


@pytest.mark.parametrize(
    ("holder", "line"),
    [
        (None, "waiting for node image v1.37.2 being built by another process"),
        (
            LockHolder(42, "dra-conformance run", "node image v1.37.2", 1000.0),
            "waiting for node image v1.37.2 being built by pid 42 (dra-conformance run, "
            "started 8m42s ago)",
        ),
    ],
)
def test_the_waiting_line(holder: LockHolder | None, line: str) -> None:
    assert waiting_line("node image v1.37.2", holder, 1522.0) == line
