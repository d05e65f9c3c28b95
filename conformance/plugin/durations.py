"""How long each passed test held its worker, kept for the next run's order
(conformance.run.durations)."""

from __future__ import annotations

import pytest

from conformance.report.outcomes import PROP_LEASE_WAIT
from conformance.run.durations import duration_key, record_durations


class DurationRecorder:
    """Controller (or serial process): how long each passed test held its worker, set-up and
    teardown included but not the lease wait, recorded for the next run's order when this one
    ends, unless it was interrupted. A failure waits out timeouts: it is no guide."""

    def __init__(self, driver: str) -> None:
        self.driver = driver
        self.running: dict[str, float] = {}
        self.failed: set[str] = set()
        self.measured: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        key = duration_key(report.nodeid)
        seconds = report.duration
        if report.when == "setup":
            waits = [float(v) for n, v in report.user_properties if n == PROP_LEASE_WAIT]
            seconds -= waits[-1] if waits else 0.0
            self.running[key] = 0.0
            self.failed.discard(key)
        self.running[key] = self.running.get(key, 0.0) + max(seconds, 0.0)
        if not report.passed:
            self.failed.add(key)
        if report.when == "teardown" and key not in self.failed:
            self.measured[key] = self.running.pop(key)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if exitstatus != pytest.ExitCode.INTERRUPTED:
            record_durations(self.driver, self.measured)
