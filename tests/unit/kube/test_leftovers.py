"""Leftovers of dead runs: what a cluster holds per run id and the header's line (against the
real test API server), the worker's own uncordon, and the end-of-run fault sweep over the
profile's injectors. (Which runs are alive: tests/apiserver/run/test_cluster_lease_book.py.)"""

from __future__ import annotations

import os
import subprocess
import sys

from helpers.dra_objects import namespace, node
from kube_apiserver.server import ClusterScoped, unique_name

from conformance.faults import DeviceRef, FaultContext, InjectorBase
from conformance.faults.interface import FaultKind
from conformance.faults.registry import sweep_faults
from conformance.kube.builders import Builders
from conformance.kube.cleanup import SweepResult, uncordon_run_nodes
from conformance.kube.client import K8sClients
from conformance.kube.drain import CORDONED_BY_PID_ANNOTATION
from conformance.kube.leftovers import RunLeftovers, dead_runs_note, find_leftovers
from conformance.kube.objects import ClusterObjects
from conformance.model.fault_config import FaultsConfig, FaultSpec
from conformance.model.naming import CORDONED_BY_LABEL, RUN_LABEL

RG = "resource.k8s.io/v1"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_note_names_only_dead_runs_with_the_command() -> None:
    leftovers = {
        "mine": RunLeftovers("mine", namespaces=["a"]),
        "live": RunLeftovers("live", cordoned=["n1"]),
        "dead": RunLeftovers(
            "dead", namespaces=["x", "y"], cluster_objects=["PriorityClass/p"], faults=2
        ),
    }
    note = dead_runs_note(leftovers, live={"live"}, current="mine")
    assert note == (
        "dra-conformance: this cluster holds leftovers of run(s) with no live process (run dead: "
        "2 namespace(s), 1 PriorityClass(s), 2 injected fault(s)); remove them with: "
        "dra-conformance cleanup --run-id dead"
    )
    assert dead_runs_note(leftovers, live={"live", "dead"}, current="mine") == ""


def test_sweep_result_counts_per_kind() -> None:
    result = SweepResult(
        namespaces=["a", "b"],
        cluster_objects=["DeviceTaintRule/r", "PriorityClass/p", "PriorityClass/q"],
        uncordoned=["n"],
        faults=["health on n/d"],
    )
    assert result.counts() == {
        "Namespace": 2,
        "DeviceTaintRule": 1,
        "PriorityClass": 2,
        "cordon": 1,
        "fault": 1,
    }
    assert SweepResult().counts() == {}


def test_find_leftovers_groups_by_run(
    apiserver_k8s: K8sClients, cluster_scoped: ClusterScoped
) -> None:
    run = unique_name("dead")
    ns, pc, worker = unique_name("dra-x"), unique_name("pc"), unique_name("w")
    cluster_scoped.create(namespace(ns, {RUN_LABEL: run}))
    ClusterObjects(apiserver_k8s).create(Builders(run).priority_class(pc, 5))
    cluster_scoped.track("scheduling.k8s.io/v1", "PriorityClass", pc)
    cluster_scoped.create(node(worker, {CORDONED_BY_LABEL: run}))
    found = find_leftovers(apiserver_k8s, api_versions=[RG], fault_counts={run: 3})
    assert found[run] == RunLeftovers(
        run, namespaces=[ns], cluster_objects=[f"PriorityClass/{pc}"], cordoned=[worker], faults=3
    )
    assert found[run].names() == [
        f"Namespace/{ns}",
        f"PriorityClass/{pc}",
        f"cordon of node {worker}",
        "3 injected fault(s)",
    ]


def test_a_worker_uncordons_only_its_own_cordons(
    apiserver_k8s: K8sClients, cluster_scoped: ClusterScoped
) -> None:
    run = unique_name("run")
    mine, other = unique_name("w-mine"), unique_name("w-other")
    for name, pid in ((mine, os.getpid()), (other, _dead_pid())):
        body = node(name, {CORDONED_BY_LABEL: run})
        body["metadata"]["annotations"] = {CORDONED_BY_PID_ANNOTATION: str(pid)}
        body["spec"] = {"unschedulable": True}
        cluster_scoped.create(body)
    assert uncordon_run_nodes(apiserver_k8s, run, pid=os.getpid()) == [mine]
    assert not apiserver_k8s.core.read_node(mine).spec.unschedulable
    assert apiserver_k8s.core.read_node(other).spec.unschedulable
    assert uncordon_run_nodes(apiserver_k8s, run) == [other]  # the end-of-run sweep: all


class Sweeping(InjectorBase):
    """A vendor injector that records its faults per run (the entry point of the test)."""

    kinds = frozenset({FaultKind.WITHDRAW})
    faults: dict[str, list[str]] = {"run-1": ["withdrawn dev-0"], "run-2": ["withdrawn dev-1"]}

    def __init__(self, context: FaultContext) -> None:
        self.context = context

    def withdraw(self, device: DeviceRef) -> None:  # pragma: no cover - not called here
        raise AssertionError

    def restore(self) -> None:
        pass

    def sweep(self, run_id: str) -> list[str]:
        return self.faults.pop(run_id, [])


class Broken(Sweeping):
    def sweep(self, run_id: str) -> list[str]:
        raise RuntimeError("the vendor's API is down")


class _Profile:
    driver = "x.example.com"

    class readiness:  # noqa: N801 - the shape of Profile.readiness
        daemonset_namespace = None
        daemonset_name = None

    def __init__(self, entry_point: str) -> None:
        spec = FaultSpec(FaultKind.WITHDRAW, "python", entry_point=entry_point)
        self.faults = FaultsConfig({FaultKind.WITHDRAW: spec})


def test_sweep_faults_calls_each_injector_sweep() -> None:
    profile = _Profile(f"{__name__}:Sweeping")
    result = sweep_faults(profile, "run-1", None)  # type: ignore[arg-type]
    assert (result.removed, result.errors) == (
        ["withdrawn dev-0 (faults.withdraw (method python))"],
        [],
    )
    assert Sweeping.faults == {"run-2": ["withdrawn dev-1"]}
    broken = sweep_faults(_Profile(f"{__name__}:Broken"), "run-2", None)  # type: ignore[arg-type]
    assert broken.errors == [
        "faults.withdraw (method python): RuntimeError: the vendor's API is down"
    ]
