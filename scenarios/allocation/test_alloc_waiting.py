"""DRA-ALLOC-008 (an unsatisfiable claim waits, unallocated, until a device frees up) and
DRA-ALLOC-011 (exclusivity: D devices, D+1 claims, D allocations, one pod Pending)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.scenario_api.placement import node_local_devices
from conformance.scenario_api.workloads import Workloads, pod_ready

KIND_A = "selector:kind-a"


@pytest.mark.dra_requirement("DRA-ALLOC-008")
@pytest.mark.dra_devices(KIND_A, count="all")
def test_unsatisfiable_claim_waits_unallocated_then_runs(
    workload: Workloads, k8s: K8sClients
) -> None:
    by_node = node_local_devices(workload.context, KIND_A)
    node, devices = max(by_node.items(), key=lambda item: len(item[1]))
    assert devices, f"no node has a device of kind {KIND_A}"
    # Hold one device of the node, then ask for all of them there: satisfiable only
    # partially, which must mean not at all.
    workload.claim("holder", kind=KIND_A)
    workload.run("holder", ["holder"], node=node, abort_on_prepare_failure=True)
    workload.claim("waiter", [workload.device_request(KIND_A, count=len(devices))])
    workload.pod("waiter", ["waiter"], node=node)

    condition = waits.wait_for_pod_scheduled_false(
        k8s, workload.namespace, "waiter", timeout=workload.timeout("claimAllocated")
    )
    assert condition.get("reason") == "Unschedulable", condition
    event = waits.wait_for_event(
        k8s,
        workload.namespace,
        reason="FailedScheduling",
        kind="Pod",
        name="waiter",
        message_contains="cannot allocate all claims",
        timeout=workload.timeout("claimAllocated"),
    )
    assert event.get("type") == "Warning", event
    claim = workload.read_claim("waiter")
    assert not state.is_allocated(claim), f"claim got allocated: {state.claim_summary(claim)}"
    assert state.pod_phase(workload.read_pod("waiter")) == "Pending"

    workload.delete_pod("holder", wait=False)
    workload.wait_running("waiter", abort_on_prepare_failure=True)
    results = workload.results("waiter")
    assert {r.device_id for r in results} == {d.id for d in devices}, (
        f"waiter on {node} should hold all of its {KIND_A} devices "
        f"{sorted(d.id for d in devices)}, got {results}"
    )
    workload.assert_sees_exactly("waiter", results)


@pytest.mark.dra_requirement("DRA-ALLOC-011")
@pytest.mark.dra_devices(KIND_A, count="all")
def test_one_claim_more_than_devices_leaves_exactly_one_pod_pending(
    workload: Workloads,
) -> None:
    known = workload.context.device_sets.get(KIND_A)
    assert known, f"the devices of kind {KIND_A} must be known and non-empty, got {known}"
    total = len(known)
    names = [f"c-{i}" for i in range(total + 1)]
    for name in names:
        workload.claim(name, kind=KIND_A)
        workload.pod(name, [name])

    def observe() -> dict[str, Any]:
        return {n: (workload.read_pod(n), workload.read_claim(n)) for n in names}

    def scheduled(pod: dict[str, Any] | None) -> str | None:
        cond = state.pod_condition(pod or {}, "PodScheduled")
        return cond.get("status") if cond else None

    def settled(seen: dict[str, Any]) -> bool:
        ready = sum(1 for pod, _ in seen.values() if pod_ready(pod))
        waiting = sum(1 for pod, _ in seen.values() if scheduled(pod) == "False")
        return ready == total and waiting == 1

    seen = waits.wait_until(
        observe,
        settled,
        describe=f"{total} of {total + 1} pods to run and one to stay unschedulable "
        f"({total} devices of kind {KIND_A})",
        timeout=workload.timeout("podRunning"),
        show=lambda s: {
            n: {"pod": state.pod_summary(p), "claim": state.claim_summary(c)}
            for n, (p, c) in s.items()
        },
    )
    allocated = {n: state.allocation_results(c) for n, (_, c) in seen.items() if c}
    allocated = {n: r for n, r in allocated.items() if r}
    assert len(allocated) == total, f"{total} claims should be allocated: {allocated}"
    devices = [r.device_id for results in allocated.values() for r in results]
    assert len(devices) == len(set(devices)) == total, f"a device allocated twice: {allocated}"
    assert set(devices) <= set(known), f"allocated outside kind {KIND_A}: {devices}"
    (left,) = [n for n in names if n not in allocated]
    pod = workload.read_pod(left)
    assert state.pod_phase(pod) == "Pending" and not (pod or {})["spec"].get("nodeName"), (
        f"the pod without a device should be Pending and unbound: {state.pod_summary(pod)}"
    )
    for name, results in allocated.items():
        workload.assert_sees_exactly(name, results)
