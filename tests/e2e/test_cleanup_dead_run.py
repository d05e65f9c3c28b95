"""A run killed by SIGKILL leaves its objects behind; the next run names them in its header and
`dra-conformance cleanup --run-id ID` removes every one: namespaces (and the claims in them),
labelled DeviceTaintRules and PriorityClasses, the cordon (and the node's unschedulable taint)
and the faults injected through the fake driver's control channel.

The killed run is real (DRA-DRAIN-001 cordons a node and holds claims in its namespace); while
it is alive, its fault plug-in, a DeviceTaintRule and a PriorityClass are added in its name, the
way a test of that run would have (killed before its fixtures undo them).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
from pathlib import Path

import pytest
from fakedriver.client.faults import FakeDriverFaults
from leftovers_check import RULE_VERSION, UNSCHEDULABLE_TAINT, NotYet, cli, left_of, poll, run_cmd

from conformance.cluster import kind
from conformance.faults import DeviceRef, FaultContext, FaultKind
from conformance.kube import objects
from conformance.kube.builders import Builders
from conformance.kube.client import K8sClients
from conformance.model.profile import SUITE_ROOT, Profile
from conformance.run.cluster_lease_book import EXPIRY_ENV, ClusterLeaseBook
from conformance.run.live_runs import live_run_ids

EXPIRY_S = 10.0


def _unschedulable_nodes(k8s: K8sClients) -> list[str]:
    """Nodes cordoned or still carrying the cordon's taint (the node controller lifts it)."""
    out = []
    for node in k8s.core.list_node().items:
        taints = [t.key for t in node.spec.taints or ()]
        if node.spec.unschedulable or UNSCHEDULABLE_TAINT in taints:
            out.append(node.metadata.name)
    return out


def _a_device(k8s: K8sClients, driver: str) -> DeviceRef:
    for item in k8s.resource.list_resource_slice(field_selector=f"spec.driver={driver}").items:
        if item.spec.node_name and item.spec.devices:
            return DeviceRef(
                driver, item.spec.pool.name, item.spec.devices[0].name, item.spec.node_name
            )
    raise AssertionError(f"no ResourceSlice of {driver} publishes a node-local device")


def _plant(k8s: K8sClients, run_id: str, driver: str) -> None:
    """What a test of the run leaves when killed mid-way: an injected fault (through the
    profile's plug-in, made with the run's FaultContext), a DeviceTaintRule, a PriorityClass."""
    context = FaultContext(
        kind=FaultKind.UNHEALTHY,
        driver=driver,
        run_id=run_id,
        timeout=60,
        api_client=k8s.api_client,
    )
    FakeDriverFaults(context).mark_unhealthy(_a_device(k8s, driver), "left by a killed run")
    build = Builders(run_id, "killed-test")
    suffix = secrets.token_hex(3)
    objects.create(
        k8s,
        build.device_taint_rule(
            f"killed-{suffix}",
            driver=driver,
            device="no-such-device",  # harmless to the cluster's next tests
            key="dra-conformance.io/killed",
            effect="None",
            api_version=RULE_VERSION,
        ),
    )
    objects.create(k8s, build.priority_class(f"killed-{suffix}", 10))


def test_killed_run_is_named_and_cleaned_up(
    kind_cluster: kind.KindCluster, fake_driver: Profile, k8s: K8sClients, tmp_path: Path
) -> None:
    run_id = f"killed-{secrets.token_hex(4)}"
    killed = subprocess.Popen(
        run_cmd(
            kind_cluster.name, run_id, tmp_path / "killed", "--dra-requirement", "DRA-DRAIN-001"
        ),
        cwd=SUITE_ROOT,
        # A run counts as alive while its heartbeat in the cluster's lease book is fresh: a
        # short expiry, so the next run sees it dead within seconds of the kill.
        env={**os.environ, EXPIRY_ENV: str(EXPIRY_S)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: SIGKILL reaches every process
    )
    try:

        def cordoned_with_claims() -> dict[str, list[str]]:
            if killed.poll() is not None:
                pytest.fail(f"the run ended (exit {killed.returncode}) before it cordoned")
            left = left_of(k8s, run_id)
            if not (left["cordons"] and left["namespaces"] and left["claims"]):
                raise NotYet(f"the run has not cordoned a node with claims yet: {left}")
            return left

        poll(cordoned_with_claims, timeout=240)
        _plant(k8s, run_id, fake_driver.driver)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(timeout=30)
    before = left_of(k8s, run_id)
    assert all(before.values()), f"the killed run should have left one of each: {before}"
    book = ClusterLeaseBook(k8s.core)

    def dead() -> None:
        if run_id in live_run_ids(book):
            raise NotYet(f"run {run_id} still renews its heartbeat")

    poll(dead, timeout=EXPIRY_S + 30)
    book.close()

    # The next run names the leftovers and the command (its selection is empty: header only).
    header = subprocess.run(
        run_cmd(
            kind_cluster.name,
            f"next-{secrets.token_hex(4)}",
            tmp_path / "next",
            "-k",
            "no_such_test",
        ),
        cwd=SUITE_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert f"dra-conformance cleanup --run-id {run_id}" in header.stdout, header.stdout[-3000:]
    assert "leftovers" in header.stdout
    assert left_of(k8s, run_id) == before, "a run must not delete another run's objects"

    cleanup = subprocess.run(
        cli("cleanup", "--run-id", run_id, "--name", kind_cluster.name),
        cwd=SUITE_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert "removed" in cleanup.stdout and "Namespace" in cleanup.stdout, cleanup.stdout
    assert "cordon" in cleanup.stdout and "fault" in cleanup.stdout, cleanup.stdout
    assert not any(left_of(k8s, run_id).values()), left_of(k8s, run_id)

    def uncordoned() -> None:
        if _unschedulable_nodes(k8s):
            raise NotYet(f"nodes still cordoned or tainted: {_unschedulable_nodes(k8s)}")

    poll(uncordoned, timeout=60)

    again = subprocess.run(
        cli("cleanup", "--run-id", run_id, "--name", kind_cluster.name),
        cwd=SUITE_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (again.returncode, f"run {run_id}: removed nothing") == (0, again.stdout.strip())
