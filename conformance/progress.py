"""Progress output for long steps: stage name, elapsed time, heartbeat while it runs."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO


def fmt_duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{seconds:.1f}s"


class Progress:
    """Prints `[hh:mm:ss] stage ... done (12.3s)`; long stages print a heartbeat line."""

    def __init__(self, stream: TextIO | None = None, heartbeat_s: float | None = 30.0) -> None:
        self.stream = stream or sys.stderr
        self.heartbeat_s = heartbeat_s
        self.timings: dict[str, float] = {}
        self._lock = threading.Lock()  # stages of a build graph print from several threads

    def _print(self, text: str) -> None:
        with self._lock:
            print(f"[{time.strftime('%H:%M:%S')}] {text}", file=self.stream, flush=True)

    def note(self, text: str) -> None:
        self._print(text)

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        self._print(f"{name} ...")
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.heartbeat_s):
                self._print(f"  {name}: still running ({fmt_duration(time.monotonic() - start)})")

        if self.heartbeat_s:  # None: no heartbeat lines
            threading.Thread(target=beat, daemon=True).start()
        try:
            yield
        except BaseException:
            self._print(f"{name} FAILED after {fmt_duration(time.monotonic() - start)}")
            raise
        finally:
            stop.set()
        elapsed = time.monotonic() - start
        self.timings[name] = elapsed
        self._print(f"{name} done ({fmt_duration(elapsed)})")
