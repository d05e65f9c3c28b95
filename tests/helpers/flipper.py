"""A ten-line pytest plugin that turns every test report into a pass: the forgery a sealed run
must keep out (by refusing it) or expose (MODIFIED) when it gets in."""

from __future__ import annotations

from pathlib import Path

FLIPPER = """
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"
    return report
"""


def write_flipper(directory: Path, module: str = "flipper") -> Path:
    """The plugin as `<directory>/<module>.py`, importable once `directory` is on sys.path."""
    path = directory / f"{module}.py"
    path.write_text(FLIPPER)
    return path
