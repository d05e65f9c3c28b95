"""DRA-PREEMPT-001 and -002: the scheduler of v1.35-v1.37 does not preempt pods to free DRA
devices (KEP-5690 proposes it for later); a high-priority pod waits for the device.

Each test leases one node whole and pins every pod to it: a scheduler that did preempt could
then only evict pods of that node, which are this test's own."""

from __future__ import annotations

import time
from typing import Any

import pytest
from preemption_checks import (
    Priorities,
    disruption_target,
    end_pod,
    establish_contention,
    preempted_events,
)

from conformance.kube import state, waits
from conformance.report import record_metric
from conformance.run.lease import DeviceLease
from conformance.scenario_api.workloads import Workloads


@pytest.mark.dra_requirement("DRA-PREEMPT-001")
@pytest.mark.dra_node_exclusive  # preemption, if any, evicts pods of the (pinned) node
def test_high_priority_pod_does_not_preempt_device_holder(
    workload: Workloads, priorities: Priorities, device_lease: DeviceLease
) -> None:
    contention = establish_contention(workload, priorities, device_lease.node)

    def observe() -> dict[str, Any]:
        return {
            "high": workload.read_pod(contention.high),
            "holders": {name: workload.read_pod(name) for name in contention.holders},
        }

    def nobody_preempted(v: dict[str, Any]) -> bool:
        high = v["high"] or {}
        scheduled = state.pod_condition(high, "PodScheduled") or {}
        return (
            state.pod_phase(high) == "Pending"
            and not high.get("spec", {}).get("nodeName")
            and scheduled.get("status") == "False"
            and not (high.get("status") or {}).get("nominatedNodeName")
            and all(
                state.pod_phase(p) == "Running"
                and not p["metadata"].get("deletionTimestamp")
                and disruption_target(p) is None
                for p in v["holders"].values()
                if p is not None
            )
            and None not in v["holders"].values()
        )

    waits.ensure_for(
        observe,
        nobody_preempted,
        describe=f"the high-priority pod to stay Pending (PodScheduled=False, no nominated "
        f"node) while the low-priority pods holding every {contention.kind} device keep "
        "running, not marked DisruptionTarget",
        duration=workload.timeout("settle"),
        show=lambda v: {
            "high": state.pod_summary(v["high"]),
            "holders": {n: state.pod_summary(p) for n, p in v["holders"].items()},
        },
    )
    preempted = preempted_events(workload)
    assert not preempted, f"the scheduler preempted pods for a DRA device: {preempted}"


@pytest.mark.dra_requirement("DRA-PREEMPT-002")
@pytest.mark.dra_node_exclusive  # preemption, if any, evicts pods of the (pinned) node
def test_high_priority_pod_gets_device_when_holder_ends(
    request: pytest.FixtureRequest,
    workload: Workloads,
    priorities: Priorities,
    device_lease: DeviceLease,
) -> None:
    contention = establish_contention(workload, priorities, device_lease.node)
    ending, device = sorted(contention.holders.items())[0]
    released = time.monotonic()
    end_pod(workload, ending)

    pod = workload.wait_running(contention.high)
    running = time.monotonic()
    results = workload.results(contention.high)
    assert [(r.driver, r.device_id) for r in results] == [(workload.profile.driver, device)], (
        f"the high-priority pod should get the device {device} freed by {ending}, got "
        f"{[(r.driver, r.device_id) for r in results]}"
    )
    assert state.pod_phase(workload.read_pod(ending)) == "Failed", (
        f"{ending} should have ended (activeDeadlineSeconds), is "
        f"{state.pod_summary(workload.read_pod(ending))}"
    )
    workload.assert_sees_exactly(contention.high, results)
    node = pod["spec"]["nodeName"]
    record_metric(request, "high_priority_pod_wait", running - contention.high_created, node=node)
    record_metric(
        request, "device_released_to_high_priority_running", running - released, node=node
    )
