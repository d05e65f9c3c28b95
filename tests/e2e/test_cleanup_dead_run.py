"""A run killed by SIGKILL leaves its objects behind; the next run names them in its header and
`dra-conformance cleanup --run-id ID` removes every one: namespaces (and the claims in them),
labelled DeviceTaintRules and PriorityClasses, the cordon (and the node's unschedulable taint)
and the faults injected through the fake driver's control channel.

The killed run is real (DRA-DRAIN-001 leases a node whole, cordons it and holds claims in its
namespace); while it is alive, its fault plug-in, a DeviceTaintRule and a PriorityClass are
added in its name, the way a test of that run would have (killed before its fixtures undo them).

Its device lease dies with it: a second run's process asking for that node whole gets it once
the killed holder's heartbeat expires, and waits no longer than the expiry.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakedriver.client.faults import FakeDriverFaults
from leftovers_check import (
    RULE_VERSION,
    UNSCHEDULABLE_TAINT,
    NotYet,
    cli,
    left_of,
    poll,
    run_cmd,
    stored_book,
)

from conformance.cel.selection import kind_device_sets
from conformance.cluster import kind
from conformance.faults import DeviceRef, FaultContext, FaultKind
from conformance.kube import objects
from conformance.kube.builders import Builders
from conformance.kube.client import K8sClients
from conformance.model.profile import SUITE_ROOT, Profile
from conformance.run.cluster_lease_book import EXPIRY_ENV, ClusterLeaseBook
from conformance.run.context import read_cluster_facts
from conformance.run.lease import DeviceLeaseBroker, LeaseRequest, LeaseTimeout
from conformance.run.lease_types import HELD, Scope
from conformance.run.live_runs import live_run_ids

EXPIRY_S = 10.0
# The holder renews every EXPIRY_S / 4; killed within FRESH_S of a renewal, its lease has most
# of the expiry left when the next run asks.
FRESH_S = 1.5
# Past the expiry, the next run still needs its next poll (0.5 s) and a transaction (a GET and
# a PUT of the book, seconds on a loaded machine) to see the holder dead and take the node.
GRANT_SLACK_S = 5.0
# A lease nobody held is granted in one transaction; the killed run's lease stays held at least
# EXPIRY_S - FRESH_S after the kill. The floor leaves 6 s of that for the request to start late
# (reaping the run, one read of the book) and still fails if the kill left nothing held.
MIN_WAIT_S = EXPIRY_S / 4


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


@pytest.fixture
def next_run(k8s: K8sClients, fake_driver: Profile) -> Iterator[DeviceLeaseBroker]:
    """The broker of a second run's process: the lease rules the harness derives from the
    driver's ResourceSlices, the cluster's book under an owner of its own (made before the
    kill, so the wait after it measures the lease and not the setup)."""
    facts = read_cluster_facts(k8s, fake_driver)
    sets = kind_device_sets(fake_driver, facts.devices, facts.device_classes)
    book = ClusterLeaseBook(k8s.core).start()
    yield DeviceLeaseBroker(book, sets, device_nodes={d.id: d.node for d in facts.devices})
    book.close()


def _in_group(pid: int, group: int) -> bool:
    try:
        return os.getpgid(pid) == group
    except ProcessLookupError:
        return False


def _run_holds(k8s: K8sClients, group: int, node: str) -> tuple[str, dict[str, Any]]:
    """The ticket and entry by which a process of the run (process group `group`, this host)
    holds `node` whole."""
    entries = stored_book(k8s).get("entries") or {}
    for ticket, entry in entries.items():
        if (entry["state"], entry.get("scope"), entry.get("node")) != (HELD, Scope.WHOLE, node):
            continue
        if entry.get("host") == socket.gethostname() and _in_group(int(entry["pid"]), group):
            return ticket, entry
    raise NotYet(f"awaited a lease of node {node} whole by the run; the book's entries: {entries}")


def _renewed_within(k8s: K8sClients, owner: str, seconds: float) -> None:
    beat = (stored_book(k8s).get("heartbeats") or {}).get(owner)
    if beat is None or time.time() - float(beat[0]) > seconds:
        raise NotYet(f"awaited a heartbeat of {owner} in the last {seconds}s; last: {beat}")


def _node_freed_within_expiry(
    k8s: K8sClients, next_run: DeviceLeaseBroker, ticket: str, entry: dict[str, Any]
) -> None:
    """Right after the kill, the killed run's lease is still in the book; a second run asking
    for its node whole gets it once the holder's heartbeat expired, not before, not much later."""
    node, owner = entry["node"], entry["owner"]
    book = stored_book(k8s)
    assert ticket in book.get("entries", {}), (
        f"awaited the killed run's lease of {node} still in the book after the kill; "
        f"the book's entries: {book.get('entries')}"
    )
    at, expiry = (float(x) for x in book["heartbeats"][owner])
    assert expiry == EXPIRY_S, f"{owner} declared expiry {expiry}s, not {EXPIRY_S}s"
    expires_at = at + expiry
    patience = EXPIRY_S + 30.0  # a lease reclaimed late is measured, one never reclaimed fails
    try:
        lease = next_run.acquire(LeaseRequest("next-run", nodes=(node,)), timeout=patience)
    except LeaseTimeout as exc:
        pytest.fail(
            f"awaited node {node} whole within {patience:.0f}s of the kill; the killed holder "
            f"{owner}'s heartbeat expired {time.time() - expires_at:.0f}s ago; {exc}; "
            f"the book's entries: {stored_book(k8s).get('entries')}"
        )
    try:
        granted = {h["ticket"]: h for h in next_run.holders()}[lease.ticket]
        print(f"node {node} granted to the next run after {lease.waited_s:.1f}s (expiry {expiry}s)")
        assert lease.node == node, f"awaited node {node} whole; granted {lease}"
        assert granted["since"] > expires_at, (
            f"awaited the grant after {owner}'s heartbeat expired at {expires_at:.1f}; "
            f"granted at {granted['since']:.1f}: {granted}"
        )
        assert MIN_WAIT_S <= lease.waited_s <= EXPIRY_S + GRANT_SLACK_S, (
            f"awaited a wait of {MIN_WAIT_S}..{EXPIRY_S + GRANT_SLACK_S}s for node {node} held "
            f"by the killed run (expiry {EXPIRY_S}s); waited {lease.waited_s:.1f}s; "
            f"the killed run's entry: {entry}"
        )
    finally:
        next_run.release(lease)
        next_run.book.close()


def test_killed_run_is_named_and_cleaned_up(
    kind_cluster: kind.KindCluster,
    fake_driver: Profile,
    k8s: K8sClients,
    next_run: DeviceLeaseBroker,
    tmp_path: Path,
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

        (node,) = poll(cordoned_with_claims, timeout=240)["cordons"]
        _plant(k8s, run_id, fake_driver.driver)
        ticket, entry = poll(lambda: _run_holds(k8s, killed.pid, node), timeout=30)
        poll(lambda: _renewed_within(k8s, entry["owner"], FRESH_S), timeout=30, interval=0.2)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(timeout=30)
    _node_freed_within_expiry(k8s, next_run, ticket, entry)
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
