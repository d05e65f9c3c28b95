"""Live progress for `dra-conformance run`: tests and requirements done of total, the test
that is running, elapsed time. A pytest plugin object, registered by the run command only."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

import pytest

from conformance.report.outcomes import PROP_REQUIREMENT, report_stamp, suite_requirement


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"


def _requirement(report: Any) -> str | None:
    return report_stamp(report).get(PROP_REQUIREMENT)


class RunProgress:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.total_tests: int | None = None
        self.done_tests = 0
        self.requirements_seen: set[str] = set()
        self.requirements_total: int | None = None
        self.running: dict[str, float] = {}

    def line(self, text: str) -> str:
        return f"[{_clock(time.monotonic() - self.start)}] {text}"

    def _print(self, text: str) -> None:
        print(self.line(text), file=self.stream, flush=True)

    # single process: the items are here; under xdist the controller only sees ids
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.total_tests = len(items)
        ids = {r for r in map(suite_requirement, items) if r} or {
            m.args[0] for item in items for m in item.iter_markers("dra_requirement") if m.args
        }
        self.requirements_total = len(ids)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.total_tests = len(ids)

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.running[nodeid] = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        finished = report.when == "teardown" or (report.when == "setup" and not report.passed)
        req = _requirement(report)
        if req:
            self.requirements_seen.add(req)
        if not finished or report.nodeid not in self.running:
            return
        started = self.running.pop(report.nodeid)
        self.done_tests += 1
        total = self.total_tests if self.total_tests is not None else "?"
        reqs = f"{len(self.requirements_seen)}"
        if self.requirements_total:
            reqs += f"/{self.requirements_total}"
        current = next(iter(self.running), None)
        self._print(
            f"{self.done_tests}/{total} tests, requirements reached {reqs}; finished "
            f"{report.nodeid} ({time.monotonic() - started:.1f}s)"
            + (f"; running {current}" if current else "")
        )
