"""Diagnostics attached to a failed scenario test's report (and to Allure)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from conformance.kube.client import load_clients
from conformance.model.naming import file_safe
from conformance.plugin.state import (
    CALL_FAILED_KEY,
    NAMESPACE_KEY,
    STARTED_KEY,
    get_run_context,
)
from conformance.run.context import RunContext


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED_KEY] = report.failed
    namespace = item.stash.get(NAMESPACE_KEY, None)
    context = get_run_context(item.config)
    if report.failed and report.when in ("setup", "call") and namespace and context:
        summary = _take_diagnostics(item, context, namespace)
        report.sections.append(("dra-conformance diagnostics", summary))
    return report


def _take_diagnostics(item: pytest.Item, context: RunContext, namespace: str) -> str:
    from conformance.kube.diagnostics import (
        DiagnosticsRequest,
        attach_to_allure,
        collect_diagnostics,
    )
    from conformance.node_access import Operation
    from conformance.node_access.choose import node_access_for

    profile = context.profile
    access = node_access_for(context)
    reachable = [n for n in context.nodes if access.unavailable(Operation.RUN, n) is None]
    request = DiagnosticsRequest(
        namespace=namespace,
        out_dir=context.run_dir / "diagnostics" / file_safe(item.nodeid),
        driver=profile.driver,
        since=item.stash.get(STARTED_KEY, time.time() - 600),
        driver_namespace=profile.readiness.daemonset_namespace,
        driver_daemonset=profile.readiness.daemonset_name,
        kubelet_log=access.kubelet_log if reachable else None,
        kubelet_log_nodes=reachable,
    )
    try:
        result = collect_diagnostics(
            load_clients(context.cluster.kubeconfig, context.cluster.context), request
        )
        attach_to_allure(result)
    except Exception as exc:  # diagnostics must never mask the test's own failure
        return f"diagnostics failed: {type(exc).__name__}: {exc}"
    return result.summary()


# --- interruption and the end-of-run sweep ----------------------------------------------------
