"""A run whose set-up failed (cluster, driver install, cluster facts) stops before it collects a
test and ends with NO-VERDICT (conformance/report/no_verdict.py): the report says why, the
terminal says it once, on one line with its remedy, and pytest exits with its internal-error
code. Registered by the session set-up only when it failed."""

from __future__ import annotations

import pytest

from conformance.report.no_verdict import SET_UP, one_line, set_no_verdict

PLUGIN_NAME = "dra_conformance_setup_failed"


class SetupFailed:
    """Skips collection and the test loop (xdist's too: these run first and decide)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> bool:
        session.items = []
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        return True

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR


def stop_before_testing(config: pytest.Config, problem: str, remedy: str = "") -> None:
    """Record why the run has no verdict and keep it from running any test."""
    set_no_verdict(config, SET_UP, one_line(problem, remedy))
    config.pluginmanager.register(SetupFailed(), PLUGIN_NAME)
