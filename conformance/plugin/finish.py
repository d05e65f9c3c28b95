"""The end of a run: Ctrl-C/SIGTERM cleanup of this process's namespaces, the end-of-run
sweep, the terminal summary, the cluster's teardown."""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

import pytest

from conformance.kube.cleanup import (
    NamespaceRegistry,
    delete_registered,
    sweep_run,
    uncordon_run_nodes,
)
from conformance.kube.client import K8sClients, load_clients
from conformance.plugin.state import (
    get_run_context,
    is_worker,
    plugin_state,
)
from conformance.run.context import RunContext

log = logging.getLogger("conformance.plugin")


class InterruptHooks:
    """Ctrl-C / SIGTERM (controller or xdist worker): delete this process's namespaces and
    uncordon the nodes it cordoned now (the hook gets no config). The current test's fixtures
    then undo its faults and DeviceTaintRules as the interrupted session tears down."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        context = get_run_context(self.config)
        if context is None:
            return
        try:
            k8s = load_clients(context.cluster.kubeconfig, context.cluster.context)
            delete_registered(
                k8s, NamespaceRegistry(context.harness_dir / "namespaces"), pid=os.getpid()
            )
            uncordon_run_nodes(k8s, context.run_id, pid=os.getpid())
        except Exception as exc:  # noqa: BLE001 - best effort while being interrupted
            log.warning("could not delete this process's namespaces and cordons: %s", exc)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = plugin_state(config)
    context = get_run_context(config)
    if context is None or is_worker(config):
        return
    try:
        k8s = load_clients(context.cluster.kubeconfig, context.cluster.context)
        result = sweep_run(
            k8s,
            context.run_id,
            NamespaceRegistry(context.harness_dir / "namespaces"),
            timeout=context.timeout("namespaceDeleted"),
            api_versions=list(context.served_resources),
            fault_sweeper=_fault_sweeper(context, k8s),
        )
        state.sweep_summary = result.summary()
        restored = _restore_deleted_nodes(k8s, context)
        if restored:
            state.sweep_summary += "; restored deleted node(s) " + ", ".join(restored)
    except Exception as exc:  # noqa: BLE001 - report, do not turn a verdict into a crash
        state.sweep_summary = (
            f"end-of-run sweep failed: {type(exc).__name__}: {exc}; remove the leftovers "
            f"with: dra-conformance cleanup --run-id {context.run_id}"
        )
    finally:
        _unregister_run(config, context)


def _fault_sweeper(context: RunContext, k8s: K8sClients) -> Any:
    """Every configured injector's sweep of this run's faults (FaultInjector.sweep)."""

    def sweep(run_id: str) -> tuple[list[str], list[str]]:
        from conformance.faults.registry import sweep_faults

        version = context.device_taint_rule_api_version()
        result = sweep_faults(
            context.profile,
            run_id,
            k8s.api_client,
            kubeconfig=context.cluster.kubeconfig,
            kube_context=context.cluster.context,
            taint_rule_version=version.split("/", 1)[1] if version else None,
        )
        return result.removed, result.errors

    return sweep


def _unregister_run(config: pytest.Config, context: RunContext) -> None:
    from conformance.plugin.fixtures import lease_book
    from conformance.run.live_runs import unregister_run

    try:
        book = lease_book(config, context)
        unregister_run(book, context.run_id)
        book.close()  # its heartbeat goes: nothing of this run is left in the book
    except Exception as exc:  # noqa: BLE001 - it expires anyway; never fail the report
        log.warning("could not remove the run from the cluster's live-run registry: %s", exc)


def _restore_deleted_nodes(k8s: K8sClients, context: RunContext) -> list[str]:
    """Nodes a killed test deleted (DRA-DRAIN-005) and could not bring back itself."""
    from conformance.kube.nodes import (
        DELETED_NODES_DIR,
        DeletedNodeRegistry,
        restore_recorded_nodes,
    )
    from conformance.node_access.choose import node_access_for

    registry = DeletedNodeRegistry(context.harness_dir / DELETED_NODES_DIR)
    restart = node_access_for(context).restart_kubelet
    return restore_recorded_nodes(k8s, registry, restart, timeout=context.timeout("driverReady"))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = plugin_state(config)
    lines = [n for n in (state.coverage_note, state.sweep_summary, *state.notes) if n]
    if lines:
        terminalreporter.section("dra-conformance")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = plugin_state(config)
    if state.previous_sigterm is not None:
        signal.signal(signal.SIGTERM, state.previous_sigterm)
        state.previous_sigterm = None
    handle, state.handle = state.handle, None
    if handle is not None and config.getoption("dra_keep_cluster") == "no":
        handle.teardown()
