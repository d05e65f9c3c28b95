"""Chaos: the cluster changes under a run with -n 4.

- `docker stop` of a worker node mid-run, started again at once (with its old address);
- deletion of the driver's namespace mid-run (the driver is installed again afterwards).

After each: nothing of the run is left on the cluster, the tests it hit are reported (failed,
error or not-run, never passed by default), summary.json is written, and the verdict is never
CONFORMANT. Waits are scaled down (--dra-timeout-scale) so a test that can no longer succeed
gives up in seconds.
"""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest
from chaos_run import nothing_left, start, statuses_of, summary_of
from leftovers_check import NotYet, poll

from conformance import docker_client
from conformance.cluster import kind
from conformance.install import installer
from conformance.kube.client import K8sClients
from conformance.kube.daemonsets import wait_driver_ready
from conformance.model.naming import RUN_LABEL
from conformance.model.profile import Profile
from conformance.node_access.kind_restart import restart_keeping_addresses
from conformance.progress import Progress

pytestmark = pytest.mark.e2e

SCALED = ("--dra-timeout-scale", "0.3")
# A stopped node hurts only the tests on it at that moment: enough of them must be running.
NODE_STOP_SELECTION = ("scenarios/core", "scenarios/allocation", *SCALED)
# Without its driver every later test fails: the core suite is enough.
NAMESPACE_DELETE_SELECTION = ("scenarios/core", *SCALED)
NOT_MET = ("failed", "error", "not-run")


def after_tests_started(run: subprocess.Popen, k8s: K8sClients, run_id: str, count: int) -> None:
    started: set[str] = set()

    def enough() -> None:
        if run.poll() is not None:
            pytest.fail(f"the run ended (exit {run.returncode}) before {count} tests started")
        listing = k8s.core.list_namespace(label_selector=f"{RUN_LABEL}={run_id}")
        started.update(n.metadata.name for n in listing.items)
        if len(started) < count:
            raise NotYet(f"{len(started)} of the run's tests started")

    poll(enough, timeout=300, interval=0.5)


def finish(run: subprocess.Popen, timeout: float) -> str:
    try:
        output, _ = run.communicate(timeout=timeout)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(timeout=30)
    return output


@pytest.mark.e2e_by_hand
def test_a_worker_node_stopped_and_started_mid_run(
    kind_cluster: kind.KindCluster, fake_driver: Profile, k8s: K8sClients, tmp_path: Path
) -> None:
    run_id = f"nodestop-{secrets.token_hex(4)}"
    report_dir = tmp_path / "report"
    run = start(kind_cluster.name, run_id, report_dir, *NODE_STOP_SELECTION)
    try:
        after_tests_started(run, k8s, run_id, 3)
        # Stopped and started again with its old address (the kubelet keeps --node-ip).
        worker = docker_client.client().containers.get(f"{kind_cluster.name}-worker")
        restart_keeping_addresses(worker, stop_timeout=5)
        output = finish(run, timeout=900)
    finally:
        wait_driver_ready(k8s, fake_driver, timeout=300)  # the rest of the tier needs it
    summary = summary_of(report_dir, output)
    statuses = statuses_of(summary)
    assert statuses, output[-3000:]
    nothing_left(k8s, run_id, output)


def test_the_driver_namespace_deleted_mid_run(
    kind_cluster: kind.KindCluster,
    fake_driver: Profile,
    k8s: K8sClients,
    progress: Progress,
    tmp_path: Path,
) -> None:
    """The driver is installed again while the run goes on, as an operator would: pods whose
    claims were prepared by the deleted driver can only be unprepared (and their namespaces
    deleted) by a driver that is back."""
    run_id = f"nsdelete-{secrets.token_hex(4)}"
    report_dir = tmp_path / "report"
    namespace = fake_driver.readiness.daemonset_namespace
    assert namespace, "the fake profile names its DaemonSet's namespace"
    kubeconfig = str(kind_cluster.kubeconfig)

    def namespace_gone() -> None:
        if any(n.metadata.name == namespace for n in k8s.core.list_namespace().items):
            raise NotYet(f"namespace {namespace} still terminating")

    run = start(kind_cluster.name, run_id, report_dir, *NAMESPACE_DELETE_SELECTION)
    try:
        after_tests_started(run, k8s, run_id, 2)
        k8s.core.delete_namespace(namespace)
        poll(namespace_gone, timeout=180)
    finally:
        installer.install(
            fake_driver, kubeconfig, None, installer.KindTarget(kind_cluster.name), progress
        )
        installer.wait_ready(fake_driver, kubeconfig, None, progress=progress)
        output = finish(run, timeout=900)
    summary = summary_of(report_dir, output)
    statuses = statuses_of(summary)
    not_met = {r: s for r, s in statuses.items() if s in NOT_MET}
    assert not_met, f"no requirement noticed that the driver was gone: {statuses}"
    nothing_left(k8s, run_id, output)
