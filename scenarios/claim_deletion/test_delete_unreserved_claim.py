"""DRA-DEL-002: deleting an allocated claim that no pod reserves frees its device.

v1.37 deallocates a claim as soon as its last consumer goes, so an allocated claim without
consumers is one allocated outside the scheduler, through the status subresource (as a
control-plane allocator or an administrator does). The test allocates a free device that
way; it leases the device's node whole, so no other test's pod can be allocated that device
in the meantime (the scheduler tracks allocated devices as a set, and a device written into
two claims would confuse it).
"""

from __future__ import annotations

import pytest
from deletion_checks import DELETE_PROTECTION, uid

from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.run.lease import DeviceLease
from conformance.scenario_api.device_reuse import ReuseProbe, all_claims, holders
from conformance.scenario_api.workloads import Workloads


def _free_device(workload: Workloads, node: str | None) -> str:
    """A device of the default kind on `node` (the leased one) that no claim holds."""
    assert node is not None, "the test needs a node lease (@pytest.mark.dra_node_exclusive)"
    devices = workload.context.devices_of_kind("default")
    assert devices, "the devices of the default class are unknown or none are published"
    claims = all_claims(workload.k8s)
    driver = workload.profile.driver
    free = [d for d in devices if d.node == node and not holders(claims, driver, d.id)]
    assert free, f"every device of {workload.profile.default_class} on {node} is allocated"
    return free[0].id


@pytest.mark.dra_requirement("DRA-DEL-002")
@pytest.mark.dra_node_exclusive  # hand-written allocation of a device of the node (docstring)
def test_deleting_unreserved_allocated_claim_frees_its_device(
    workload: Workloads, k8s: K8sClients, device_lease: DeviceLease
) -> None:
    ns = workload.namespace
    device = workload.context.device(_free_device(workload, device_lease.node))
    request = "dev"
    workload.claim("unreserved", [workload.device_request("default", name=request)])
    k8s.resource.patch_namespaced_resource_claim(
        "unreserved",
        ns,
        {"metadata": {"finalizers": [DELETE_PROTECTION]}},
        field_manager=FIELD_MANAGER,
    )
    allocation = {
        "devices": {
            "results": [
                {
                    "request": request,
                    "driver": workload.profile.driver,
                    "pool": device.pool,
                    "device": device.name,
                }
            ]
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [device.node]}
                    ]
                }
            ]
        },
    }
    k8s.resource.patch_namespaced_resource_claim_status(
        "unreserved", ns, {"status": {"allocation": allocation}}, field_manager=FIELD_MANAGER
    )
    unreserved = workload.read_claim("unreserved")
    assert [r.device_id for r in state.allocation_results(unreserved)] == [device.id], (
        state.claim_summary(unreserved)
    )
    assert not (unreserved.get("status") or {}).get("reservedFor"), state.claim_summary(unreserved)

    # The scheduler must see the device as taken before the deletion, free after it.
    probe = ReuseProbe.start(workload, device.id)
    probe.assert_blocked()

    workload.delete_claim("unreserved")
    waits.wait_for_deleted(
        lambda: workload.read_claim("unreserved"),
        describe=f"allocated, unreserved ResourceClaim {ns}/unreserved",
        timeout=workload.timeout("podDeleted"),
    )
    probe.wait_reallocated(released_uids={uid(unreserved)})
