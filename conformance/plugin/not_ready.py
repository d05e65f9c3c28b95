"""The test protocol of a run whose driver never became ready.

Every scenario test is reported without running: no fixture is set up, so nothing touches the
cluster. A test whose requirement is proven by a failed part of readiness (the catalog's
`readiness:` key) fails in its call phase with the reason the cluster gave; every other test
ends *not run* in its setup phase (conformance.plugin's pytest_runtest_setup decides that, as it
decides not-applicable). The reports take pytest's usual path (logstart, makereport, logreport,
logfinish), so the terminal, JUnit, xdist, Allure and the run report see ordinary results.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _pytest.runner import call_and_report, get_reraise_exceptions

from conformance.model.outcome import not_run
from conformance.model.readiness_failure import ReadinessFailure
from conformance.model.requirements import Requirement

NOT_READY = "the driver never became ready"


def fails_on_readiness(req: Requirement, failure: ReadinessFailure) -> bool:
    """Whether `req` is decided by the failed readiness (rather than left not run)."""
    return req.readiness is not None and req.readiness in failure.failed_parts


def driver_not_ready_reason(failure: ReadinessFailure) -> tuple[str, str]:
    """(reason, remedy) of a test that is not run because the driver never became ready."""
    return f"{NOT_READY}: {failure.brief()}", failure.remedy()


def run_without_driver(
    item: pytest.Item, nextitem: pytest.Item | None, req: Requirement, failure: ReadinessFailure
) -> None:
    """pytest's runtestprotocol, minus fixture set-up and the test body."""
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    # Every setup hook but pytest's runner, which would set up the fixtures: labels, Allure
    # names, capture and logging still see the test; the harness's hook ends it not run (or
    # not applicable) unless a failed readiness part decides it.
    runner = item.config.pluginmanager.get_plugin("runner")
    setup_hooks = item.config.pluginmanager.subset_hook_caller("pytest_runtest_setup", [runner])

    def setup() -> None:
        setup_hooks(item=item)
        if not fails_on_readiness(req, failure):  # the harness's hook has said so already
            not_run(*driver_not_ready_reason(failure))

    if _report(item, "setup", setup).passed:
        reason = failure.reason_for(req.readiness or "")
        _report(item, "call", lambda: pytest.fail(reason, pytrace=False))
    call_and_report(item, "teardown", nextitem=nextitem)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def _report(item: pytest.Item, when: str, func: Callable[[], object]) -> pytest.TestReport:
    call = pytest.CallInfo.from_call(
        func,
        when=when,  # type: ignore[arg-type]
        reraise=get_reraise_exceptions(item.config),
    )
    report: pytest.TestReport = item.ihook.pytest_runtest_makereport(item=item, call=call)
    item.ihook.pytest_runtest_logreport(report=report)
    return report
