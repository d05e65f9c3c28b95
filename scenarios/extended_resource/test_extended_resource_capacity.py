"""DRA-EXT-003: asking for more of the extended resource than is free leaves the pod Pending,
with nothing allocated for it; once enough is free it runs."""

from __future__ import annotations

from typing import Any

import pytest
from extended_checks import devices_per_node, extended_pod, special_claim

from conformance.kube import state, waits
from conformance.scenario_api.workloads import Workloads

KIND = "extended-resource"


def _allocated_claims_of(workload: Workloads, pod: dict[str, Any]) -> list[str]:
    """Claims in the namespace owned by `pod` that hold an allocation."""
    uid = pod["metadata"]["uid"]
    claims = workload.k8s.resource.list_namespaced_resource_claim(workload.namespace).items
    out = []
    for c in (workload.k8s.to_dict(c) for c in claims):
        owners = {o.get("uid") for o in c["metadata"].get("ownerReferences") or ()}
        if uid in owners and state.is_allocated(c):
            out.append(c["metadata"]["name"])
    return out


@pytest.mark.dra_requirement("DRA-EXT-003")
@pytest.mark.dra_devices(KIND, count="all")
def test_request_beyond_free_devices_stays_pending(workload: Workloads) -> None:
    extended = workload.profile.extended_resource
    per_node = devices_per_node(workload, KIND)
    assert per_node, f"no node publishes devices of {extended.device_class}"
    node, devices = max(per_node.items(), key=lambda kv: (len(kv[1]), kv[0]))
    wanted = len(devices)  # all of the node's devices, while one of them is held

    extended_pod(workload, "holder", extended.name, 1, node=node)
    workload.wait_running("holder")
    extended_pod(workload, "greedy", extended.name, wanted, node=node)
    condition = waits.wait_for_pod_scheduled_false(
        workload.k8s, workload.namespace, "greedy", timeout=workload.timeout("claimAllocated")
    )
    assert condition.get("reason") == "Unschedulable", condition

    def pending_without_devices(pod: dict[str, Any] | None) -> bool:
        return (
            pod is not None
            and state.pod_phase(pod) == "Pending"
            and not pod["spec"].get("nodeName")
            and not (pod.get("status") or {}).get("extendedResourceClaimStatus")
            and not _allocated_claims_of(workload, pod)
        )

    waits.ensure_for(
        lambda: workload.read_pod("greedy"),
        pending_without_devices,
        describe=f"pod greedy ({extended.name}: {wanted} on {node}, where only "
        f"{wanted - 1} are free) to stay Pending with no device allocated for it",
        duration=workload.timeout("settle"),
        show=state.pod_summary,
    )

    workload.delete_pod("holder")
    pod = workload.wait_running("greedy")
    _, results = special_claim(workload, pod, extended.name, extended.device_class, wanted)
    assert {r.device_id for r in results} == set(devices), (
        f"greedy should get every {KIND} device of {node} ({sorted(devices)}), got "
        f"{sorted(r.device_id for r in results)}"
    )
    workload.assert_sees_exactly("greedy", results)
