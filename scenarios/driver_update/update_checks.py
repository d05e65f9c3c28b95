"""What both driver-update tests check: a pod with a claim on every node runs through the
update undisturbed and keeps seeing its device, and a pod with a new claim runs on a node."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from conformance.kube import state
from conformance.kube.client import K8sClients
from conformance.kube.state import AllocationResult
from conformance.model.outcome import not_run
from conformance.run.context import RunContext
from conformance.scenario_api.disruption import PodBaseline, assert_undisturbed
from conformance.scenario_api.placement import node_local_devices
from conformance.scenario_api.workloads import Workloads


@dataclass(frozen=True)
class Survivor:
    """A pod with one claim, running on `node` before the update."""

    name: str  # of the pod and of its claim
    node: str
    baseline: PodBaseline
    held: AllocationResult


def run_survivors(workload: Workloads, context: RunContext) -> list[Survivor]:
    """One pod with a claim on every node with a device (the update reaches them all)."""
    nodes = sorted(n for n, devices in node_local_devices(context).items() if devices)
    survivors = []
    for i, node in enumerate(nodes):
        name = f"survivor-{i}"
        workload.claim(name)
        pod = workload.run(name, [name], node=node)
        [held] = workload.results(name)
        survivors.append(Survivor(name, node, PodBaseline.of(pod), held))
    return survivors


def spare_nodes(context: RunContext) -> list[str]:
    """Nodes with a device left for a new claim once a survivor holds one; not run if none."""
    nodes = sorted(n for n, devices in node_local_devices(context).items() if len(devices) >= 2)
    if not nodes:
        not_run(
            "no node has two devices of kind default: a pod with a new claim cannot run "
            "next to the pod that keeps its claim through the update",
            "run on a cluster where a node has two devices of the profile's default class",
        )
    return nodes


def assert_survivors_undisturbed(
    k8s: K8sClients, workload: Workloads, survivors: Sequence[Survivor]
) -> None:
    """Same pods and containers, same claims reserved by them, and the same devices seen."""
    assert_undisturbed(k8s, [s.baseline for s in survivors])
    for survivor in survivors:
        claim = workload.read_claim(survivor.name)
        devices = [r.device_id for r in state.allocation_results(claim)]
        assert devices == [survivor.held.device_id], (
            f"claim {survivor.name} is now allocated {devices}, not {survivor.held.device_id}"
        )
        assert [r.uid for r in state.reserved_for(claim)] == [survivor.baseline.uid]
        workload.assert_sees_exactly(survivor.name, [survivor.held])


def restart_survivors(workload: Workloads, survivors: Sequence[Survivor]) -> None:
    """A container starting after the update must get its device again: the new plugin
    serves what the old one prepared (its checkpoint, the claims' CDI specs)."""
    for survivor in survivors:
        workload.restart_container(survivor.name)
        workload.assert_sees_exactly(survivor.name, [survivor.held])


def check_newcomer(k8s: K8sClients, workload: Workloads, name: str, node: str) -> None:
    """The running pod `name` got a device of `node` from the driver, and sees exactly it."""
    driver = workload.context.profile.driver
    [got] = workload.results(name)
    assert got.driver == driver
    published = workload.node_device_ids(node)
    assert got.device_id in published, f"{name} got {got.device_id}, not a device of {node}"
    workload.assert_sees_exactly(name, [got])
