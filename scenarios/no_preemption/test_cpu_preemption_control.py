"""DRA-PREEMPT-003, the control: ordinary CPU preemption works in the same cluster, so the
absence of preemption for DRA devices (DRA-PREEMPT-001) is not a broken scheduler.

Sized from the node's allocatable CPU minus what its pods request, so it works on a 2-core
kind node as on a large one: the victim takes all but a sliver of the free CPU, the
preemptor asks for half of it.
"""

from __future__ import annotations

from typing import Any

import pytest
from preemption_checks import HeldPods, Priorities, disruption_target, free_cpu

from conformance.kube import state, waits
from conformance.kube.builders import container
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.run.lease import DeviceLease
from conformance.scenario_api.workloads import MAIN, Workloads

SLIVER_M = 100  # CPU left free next to the victim: less than the preemptor needs


@pytest.mark.dra_requirement("DRA-PREEMPT-003")
@pytest.mark.dra_node_exclusive  # any pod of the node could be the CPU victim
def test_cpu_preemption_still_works(
    workload: Workloads, priorities: Priorities, held_pods: HeldPods, device_lease: DeviceLease
) -> None:
    node = device_lease.node
    free = free_cpu(workload, node)
    assert free >= 3 * SLIVER_M, (
        f"node {node} has only {free}m CPU unrequested; the control needs at least "
        f"{3 * SLIVER_M}m to size a victim and a preemptor"
    )
    victim_m, preemptor_m = free - SLIVER_M, free // 2
    selector = workload.node_selector(node)

    def cpu_pod(name: str, millis: int, priority: str) -> dict[str, Any]:
        return workload.build.pod(
            name,
            workload.namespace,
            image=workload.context.workload_image,
            containers=[container(MAIN, limits={"cpu": f"{millis}m"})],
            node_selector=selector,
            priority_class_name=priority,
        )

    held_pods.create(cpu_pod("victim", victim_m, priorities.low))
    workload.wait_running("victim")
    workload.k8s.core.create_namespaced_pod(
        workload.namespace,
        cpu_pod("preemptor", preemptor_m, priorities.high),
        field_manager=FIELD_MANAGER,
    )

    # The scheduler sets the condition first, then deletes the victim (held by our finalizer).
    victim = waits.wait_until(
        lambda: workload.read_pod("victim"),
        lambda p: (
            p is not None
            and disruption_target(p) is not None
            and bool(p["metadata"].get("deletionTimestamp"))
        ),
        describe=f"the low-priority pod victim ({victim_m}m CPU on {node}) to be marked "
        f"DisruptionTarget and deleted by the scheduler for preemptor ({preemptor_m}m CPU)",
        timeout=workload.timeout("eviction"),
        show=state.pod_summary,
    )
    assert disruption_target(victim).get("reason") == "PreemptionByScheduler", (
        f"victim's DisruptionTarget condition: {disruption_target(victim)}"
    )
    preemptor = workload.wait_running("preemptor")
    assert preemptor["spec"]["nodeName"] == node, (
        f"preemptor should run on {node}, runs on {preemptor['spec']['nodeName']}"
    )
    waits.wait_for_event(  # the scheduler's event recorder is asynchronous
        workload.k8s,
        workload.namespace,
        reason="Preempted",
        kind="Pod",
        name="victim",
        message_contains=preemptor["metadata"]["uid"],
        timeout=workload.timeout("default"),
    )
