"""The lease book kept in the cluster (conformance.run.cluster_lease_book), against a real API
server: optimistic concurrency on resourceVersion, processes contending for one device and
writing at once, the grants of a killed holder expiring (and `cleanup` naming them), node marks
and live runs shared by the books of two machines."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterator

import pytest
from kube_apiserver.server import ApiServer, unique_name
from kubernetes.client.exceptions import ApiException

from conformance.cli.cleanup import _expired_leases
from conformance.kube.client import K8sClients
from conformance.run.cluster_lease_book import CONFIG_MAP, ClusterLeaseBook
from conformance.run.lease import DeviceLeaseBroker, DeviceNeed, LeaseRequest
from conformance.run.lease_book import BookState
from conformance.run.lease_types import BookEntry, Scope
from conformance.run.live_runs import (
    dead_runs,
    forget_dead_runs,
    live_run_ids,
    register_run,
    unregister_run,
)
from conformance.run.node_marks import active_marks, mark_no_kubelet_restart, no_kubelet_restart

SETS = {"one": frozenset({"n/1"})}
NODES = {"n/1": "n"}
CTX = multiprocessing.get_context("fork")
EXPIRE = 8.0  # seconds without a heartbeat: long enough for a loaded machine to look first
# A book that never renews: its expiry must outlast a loaded machine's first look at it.
SILENT_EXPIRE = 6.0


@pytest.fixture
def book_namespace(apiserver_k8s: K8sClients) -> Iterator[str]:
    """A namespace no one made yet: the book creates it with its ConfigMap."""
    name = unique_name("leases")
    yield name
    try:
        apiserver_k8s.core.delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise


def _broker(server: ApiServer, namespace: str, **book: float) -> DeviceLeaseBroker:
    cluster_book = ClusterLeaseBook(server.clients().core, namespace=namespace, **book).start()
    return DeviceLeaseBroker(cluster_book, SETS, device_nodes=NODES, poll_interval=0.05)


def _take_turns(server: ApiServer, namespace: str, name: str, queue: multiprocessing.Queue) -> None:
    broker = _broker(server, namespace)
    for turn in range(3):
        with broker.lease(LeaseRequest(f"{name}-{turn}", [DeviceNeed("one")]), timeout=120):
            start = time.time()
            time.sleep(0.2)
            end = time.time()
        queue.put((f"{name}-{turn}", start, end))


def test_two_processes_contending_for_one_device_never_hold_it_at_once(
    kube_apiserver: ApiServer, book_namespace: str
) -> None:
    queue: multiprocessing.Queue = CTX.Queue()
    procs = [
        CTX.Process(target=_take_turns, args=(kube_apiserver, book_namespace, name, queue))
        for name in ("a", "b")
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
    spans = sorted(queue.get(timeout=30)[1:] for _ in range(6))
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start >= end, f"two holders of the one device at once: {spans}"
    # The journal in the ConfigMap tells the same: every grant follows the release before it.
    journal = ClusterLeaseBook(kube_apiserver.clients().core, namespace=book_namespace).journal()
    assert [line["event"] for line in journal] == ["grant", "release"] * 6
    holders = [line["holder"] for line in journal]
    assert holders[::2] == holders[1::2]  # each released what it was granted, before the next


def test_a_write_between_read_and_replace_makes_the_transaction_run_again(
    kube_apiserver: ApiServer, api_namespace: str
) -> None:
    first = ClusterLeaseBook(kube_apiserver.clients().core, namespace=api_namespace)
    second = ClusterLeaseBook(kube_apiserver.clients().core, namespace=api_namespace)
    runs: list[int] = []

    def add(holder: str, owner: str) -> Callable[[BookState], int]:
        def change(state: BookState) -> int:
            entry = BookEntry(holder, (), Scope.CLUSTER, since=time.time(), owner=owner)
            return state.add(entry)

        return change

    def add_after_another_write(state: BookState) -> int:
        runs.append(state.next_ticket)
        if len(runs) == 1:  # the other book writes after this one read
            second.update(add("second", second.owner))
        return add("first", first.owner)(state)

    assert first.update(add_after_another_write) == 2
    assert runs == [1, 2] and first.conflicts == 1
    book = first.update(lambda state: {t: e.holder for t, e in state.entries.items()})
    assert book == {1: "second", 2: "first"}
    stored = kube_apiserver.clients().core.read_namespaced_config_map(CONFIG_MAP, api_namespace)
    assert '"first"' in stored.data["book"] and '"second"' in stored.data["book"]


def _hold_and_die(server: ApiServer, namespace: str, queue: multiprocessing.Queue) -> None:
    broker = _broker(server, namespace, renew_every=0.5, expire_after=EXPIRE)
    broker.acquire(LeaseRequest("killed", [DeviceNeed("one")]), timeout=60)
    queue.put("holding")
    time.sleep(1.0)  # a heartbeat or two after the grant
    os.kill(os.getpid(), signal.SIGKILL)


def test_the_grant_of_a_killed_holder_expires(
    kube_apiserver: ApiServer, api_namespace: str
) -> None:
    queue: multiprocessing.Queue = CTX.Queue()
    doomed = CTX.Process(target=_hold_and_die, args=(kube_apiserver, api_namespace, queue))
    doomed.start()
    assert queue.get(timeout=120) == "holding"
    doomed.join(60)
    assert doomed.exitcode == -signal.SIGKILL
    broker = _broker(kube_apiserver, api_namespace, renew_every=0.5, expire_after=EXPIRE)
    try:
        assert [h["holder"] for h in broker.holders()] == ["killed"]  # not expired yet
        lease = broker.acquire(LeaseRequest("next", [DeviceNeed("one")]), timeout=60)
        # Granted once the dead holder's heartbeat was older than the expiry, not much later.
        assert lease.waited_s <= EXPIRE + 10.0, lease
        assert [h["holder"] for h in broker.holders()] == ["next"]
        broker.release(lease)
    finally:
        broker.book.close()  # its heartbeat must not outlive the test's API server


def test_runs_and_marks_are_shared_by_the_books_of_two_machines(
    kube_apiserver: ApiServer, api_namespace: str
) -> None:
    core = kube_apiserver.clients().core
    here = ClusterLeaseBook(core, namespace=api_namespace, renew_every=0.3, expire_after=30).start()
    gone = ClusterLeaseBook(core, namespace=api_namespace, expire_after=SILENT_EXPIRE)
    try:
        register_run(here, "alive")
        register_run(gone, "dead")
        mark_no_kubelet_restart(here, "w1", time.time() + 60, "device plugin grace period")
        mark = no_kubelet_restart(gone, "w1")  # the other machine sees the mark
        assert mark is not None and mark.why == "device plugin grace period"
        time.sleep(SILENT_EXPIRE + 0.5)  # the second book's heartbeat is now older than its expiry
        assert live_run_ids(here) == {"alive"}
        assert set(dead_runs(here)) == {"dead"}
        forget_dead_runs(here, {"alive", "dead"})  # only the dead one goes
        assert live_run_ids(here) == {"alive"} and dead_runs(here) == {}
        unregister_run(here, "alive")
        assert live_run_ids(here) == set()
        assert [m.node for m in active_marks(here)] == ["w1"]
    finally:
        here.close()


def _register_many(server: ApiServer, namespace: str, name: str, queue: multiprocessing.Queue):
    book = ClusterLeaseBook(server.clients().core, namespace=namespace)
    for n in range(8):
        register_run(book, f"{name}-{n}")
        mark_no_kubelet_restart(book, f"{name}-node", time.time() + 60 + n, f"{name} {n}")
    queue.put(book.conflicts)


def test_writers_in_several_processes_lose_no_update(
    kube_apiserver: ApiServer, api_namespace: str
) -> None:
    queue: multiprocessing.Queue = CTX.Queue()
    procs = [
        CTX.Process(target=_register_many, args=(kube_apiserver, api_namespace, name, queue))
        for name in ("a", "b", "c")
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
    conflicts = sum(queue.get(timeout=30) for _ in procs)
    book = ClusterLeaseBook(kube_apiserver.clients().core, namespace=api_namespace)
    runs = book.update(lambda state: set(state.runs))
    assert runs == {f"{name}-{n}" for name in "abc" for n in range(8)}, f"{conflicts} conflicts"
    marks = {m.node: m.why for m in active_marks(book)}
    assert marks == {"a-node": "a 7", "b-node": "b 7", "c-node": "c 7"}  # the later mark wins


def test_cleanup_names_and_removes_the_leases_of_a_holder_that_stopped_renewing(
    kube_apiserver: ApiServer, api_namespace: str
) -> None:
    core = kube_apiserver.clients().core
    silent = ClusterLeaseBook(core, namespace=api_namespace, expire_after=SILENT_EXPIRE)
    broker = DeviceLeaseBroker(silent, SETS, device_nodes=NODES, poll_interval=0.05)
    broker.acquire(LeaseRequest("stalled", [DeviceNeed("one")], pin=True), timeout=30)
    cleaner = ClusterLeaseBook(core, namespace=api_namespace)
    assert _expired_leases(cleaner) == []  # still within its expiry
    time.sleep(SILENT_EXPIRE + 0.5)
    [line] = _expired_leases(cleaner)
    assert line.startswith("stalled (held, one×1 (on node n); holder ") and silent.owner in line
    assert _expired_leases(cleaner) == [] and cleaner.update(lambda s: s.entries) == {}


def test_a_closed_book_withdraws_its_heartbeat_and_its_entries_go_at_once(
    kube_apiserver: ApiServer, api_namespace: str
) -> None:
    core = kube_apiserver.clients().core
    leaving = ClusterLeaseBook(core, namespace=api_namespace, expire_after=600).start()
    DeviceLeaseBroker(leaving, SETS, device_nodes=NODES).acquire(
        LeaseRequest("left behind", [DeviceNeed("one")]), timeout=30
    )
    other = ClusterLeaseBook(core, namespace=api_namespace)
    assert [e.holder for e in other.update(lambda s: list(s.entries.values()))] == ["left behind"]
    leaving.close()
    assert other.update(lambda s: s.entries) == {}
