"""Puts the differential tier's counts into the test output (the CI log): a test records
`record_property(PROPERTY, tally.summary())`, which survives xdist, and the controller prints
every such line in a section of its own at the end."""

from __future__ import annotations

import pytest

PROPERTY = "cel_differential"
_LINES: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _LINES.extend(f"{report.nodeid}: {v}" for k, v in report.user_properties if k == PROPERTY)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _LINES:
        terminalreporter.section("CEL differential tier")
        for line in _LINES:
            terminalreporter.write_line(line)
