"""Call counters and latency percentiles reported in the status ConfigMap."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any


class LatencyStats:
    """Latencies of the last ``window`` calls plus lifetime counters."""

    def __init__(self, window: int = 1000) -> None:
        self._lock = threading.Lock()
        self._samples: deque[float] = deque(maxlen=window)
        self.calls = 0
        self.claims = 0
        self.failures = 0

    def record(self, seconds: float, claims: int, failures: int) -> None:
        with self._lock:
            self._samples.append(seconds)
            self.calls += 1
            self.claims += claims
            self.failures += failures

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            samples = sorted(self._samples)
            out: dict[str, Any] = {
                "calls": self.calls,
                "claims": self.claims,
                "failures": self.failures,
            }
        if samples:

            def pct(p: float) -> float:
                return round(samples[min(len(samples) - 1, int(p * len(samples)))], 4)

            out["latencySeconds"] = {
                "count": len(samples),
                "mean": round(sum(samples) / len(samples), 4),
                "p50": pct(0.50),
                "p95": pct(0.95),
                "max": round(samples[-1], 4),
            }
        return out
