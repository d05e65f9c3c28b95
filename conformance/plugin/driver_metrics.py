"""What Kubernetes measured of the driver during the run (controller or single process): the
DRA metrics read when the session starts, every PERIOD_S while it runs (every kubelet), right
before and after each kubelet restart the suite causes (spooled by the workers:
scenarios/node_restart/kubelet_restart_checks.py) and when it ends, and the cluster's inventory
at its end, handed to the report. None of it may stop a run or its report: any failure is "not
available (why)", an interrupted run does not wait for them, and the wait for the last claims
to be released before the end read is short, because a broken driver's run pays all of it."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from conformance.kube.client import K8sClients, load_clients
from conformance.metrics.inventory import read_cluster_inventory
from conformance.metrics.operations import driver_operations, not_available
from conformance.metrics.scrape import (
    CLAIMS_IN_USE,
    CONTROLLER_MANAGER,
    SCHEDULER,
    Snapshot,
    take_snapshot,
)
from conformance.metrics.spool import spool_in
from conformance.plugin.state import get_run_context
from conformance.report.driver_figures import set_driver_figures
from conformance.run.context import RunContext

ANY_DRIVER = "<any>"
SETTLE_S = 6.0  # the longest wait for the kubelets to release the run's last claims
SETTLE_POLL_S = 1.0
COMPONENTS = (SCHEDULER, CONTROLLER_MANAGER)
PERIOD_S = 15.0  # a kubelet restarted unseen between two reads loses at most this much


class PeriodicReads:
    """Every kubelet read every PERIOD_S on a thread of its own, until stopped."""

    def __init__(self, context: RunContext) -> None:
        self.context = context
        self.snapshots: list[Snapshot] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dra-metrics", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> list[Snapshot]:
        self._stop.set()
        self._thread.join(timeout=20.0)
        return list(self.snapshots)

    def _loop(self) -> None:
        while not self._stop.wait(PERIOD_S):
            try:
                self.snapshots.append(take_snapshot(_clients(self.context), ()))
            except Exception:  # noqa: BLE001 - a missed read is a gap, never a stopped run
                continue


class DriverMetricsRecorder:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.start: Snapshot | None = None
        self.start_problem = "the run was not set up"
        self.periodic: PeriodicReads | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # after the plugin's own (tryfirst) set-up, before xdist starts its workers (trylast)
        context = get_run_context(self.config)
        if context is None:
            return
        try:
            self.start = take_snapshot(_clients(context), COMPONENTS)
        except Exception as exc:  # noqa: BLE001 - a figure never stops a run
            self.start_problem = f"the start read failed: {_one_line(exc)}"
            return
        self.periodic = PeriodicReads(context)
        self.periodic.start()

    @pytest.hookimpl(tryfirst=True)  # before the report collector writes the report
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        context = get_run_context(self.config)
        if context is None:
            return
        between = self.periodic.stop() if self.periodic is not None else []
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            why = not_available("the run was interrupted: not measured")
            set_driver_figures(self.config, why, why)
            return
        operations = self._operations(context, between)
        set_driver_figures(self.config, operations, _inventory(context))

    def _operations(self, context: RunContext, between: list[Snapshot]) -> dict[str, Any]:
        if self.start is None:
            return not_available(self.start_problem)
        try:
            end = _settled_snapshot(_clients(context), self.start)
            around_restarts = spool_in(context.harness_dir).snapshots()
            return driver_operations(self.start, end, [*between, *around_restarts])
        except Exception as exc:  # noqa: BLE001 - a figure never stops a report
            return not_available(f"the end read failed: {_one_line(exc)}")


def _settled_snapshot(k8s: K8sClients, start: Snapshot) -> Snapshot:
    """The end read, once the kubelets hold no more claims prepared than at the start
    (the last tests' pods may still be terminating), or after SETTLE_S."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        end = take_snapshot(k8s, COMPONENTS)
        if time.monotonic() >= deadline or _in_use(end) <= _in_use(start):
            return end
        time.sleep(SETTLE_POLL_S)


def _in_use(snapshot: Snapshot) -> float:
    """Claims the kubelets hold prepared, any driver: a kubelet drops a driver's own series
    once it holds none of its claims, the `<any>` one stays."""
    return sum(
        sample.value
        for metrics in snapshot.sources.values()
        for sample in metrics.gauges.get(CLAIMS_IN_USE, [])
        if sample.label("driver_name") == ANY_DRIVER
    )


def _inventory(context: RunContext) -> dict[str, Any]:
    served = [gv.split("/", 1)[1] for gv in context.served_resources if "/" in gv]
    version = "v1" if "v1" in served else (served[0] if served else "v1")
    try:
        return read_cluster_inventory(_clients(context), version)
    except Exception as exc:  # noqa: BLE001 - a figure never stops a report
        return not_available(f"could not read claims and slices: {_one_line(exc)}")


def _clients(context: RunContext) -> K8sClients:
    return load_clients(context.cluster.kubeconfig, context.cluster.context)


def _one_line(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    detail = f"HTTP {status} {getattr(exc, 'reason', '')}" if status else str(exc)
    first = detail.splitlines()[0] if detail else ""
    return f"{type(exc).__name__}: {first}"[:300]
