"""DRA-ALLOC-017: claims share a device that allows multiple allocations, up to its capacity
(DRAConsumableCapacity).

The test leases one node whole (one with shareable devices) and pins its pods there. It reads
the node's shareable devices (allowMultipleAllocations: true) from the driver's slices and
asks, per claim, for half the smallest device's capacity, rounded as the device's
requestPolicy rounds it: exactly k claims fit on the node. Those k run, each with its own
shareID and consumedCapacity, several on one device; claim k+1 stays unallocated; once a
holder ends, it runs on the device that freed up.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from kubernetes.utils import parse_quantity
from shared_capacity_checks import SharedDevice, shared_devices

from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.kube.slices import list_slices
from conformance.kube.state import AllocationResult
from conformance.model.outcome import not_applicable, not_run
from conformance.model.profile import CONSUMABLE_KIND
from conformance.observe.steps import attach_yaml
from conformance.run.lease import DeviceLease
from conformance.scenario_api.workloads import Workloads


def _plan(devices: list[SharedDevice], capacity: str) -> tuple[Decimal, dict[str, int]]:
    """The request (half the smallest device's capacity) and how many claims each device
    holds with it."""
    sized = [d for d in devices if capacity in d.capacity]
    if not sized:
        not_run(
            f"no shareable device on the node publishes capacity {capacity}",
            "set consumableCapacity.capacity to a capacity of the shareable devices",
        )
    half = min(d.capacity[capacity].value for d in sized) / 2
    fits = {d.id: d.fits({capacity: half}) for d in sized}
    if max(fits.values()) < 2:
        not_run(
            f"no shareable device holds two claims of {capacity} {half} (per device: {fits}); "
            "its requestPolicy rounds such a request up too far",
            "publish a requestPolicy that lets half the capacity be requested",
        )
    return half, fits


def _check_shares(
    got: dict[str, AllocationResult],
    fits: dict[str, int],
    capacity: str,
    want: dict[str, Decimal],
) -> None:
    """Each claim holds its own share (shareID) of a shareable device, recorded with what it
    consumes; the devices hold as many claims as fit."""
    for name, result in got.items():
        assert result.device_id in fits, (
            f"claim {name} got {result.device_id}, not a shareable device of the node "
            f"{sorted(fits)} (consumableCapacity.class must select only those)"
        )
        assert result.share_id, (
            f"claim {name} shares device {result.device_id} without a shareID in its "
            "allocation result (status.allocation.devices.results[].shareID)"
        )
        used = result.consumed_capacity.get(capacity)
        expected = want[result.device_id]
        assert used is not None and parse_quantity(used) == expected, (
            f"claim {name} on {result.device_id}: consumedCapacity[{capacity}] is {used}, "
            f"want {expected} (the request, rounded by the requestPolicy)"
        )
    share_ids = [r.share_id for r in got.values()]
    assert len(set(share_ids)) == len(share_ids), f"shareIDs repeat: {got}"
    per_device = {d: sum(1 for r in got.values() if r.device_id == d) for d in fits}
    assert per_device == fits, (
        f"each shareable device should hold as many claims as fit {fits}, got {per_device}"
    )


@pytest.mark.dra_requirement("DRA-ALLOC-017")
@pytest.mark.dra_node_exclusive(CONSUMABLE_KIND)  # every share of the node's shareable devices
def test_claims_share_a_device_up_to_its_capacity(
    workload: Workloads, k8s: K8sClients, device_lease: DeviceLease
) -> None:
    node = device_lease.node
    section = workload.profile.consumable_capacity
    assert section is not None  # the lease of kind consumable-capacity needs it
    capacity = section.capacity or workload.profile.capacity
    if not capacity:
        not_run(
            "the profile names no capacity to share (consumableCapacity.capacity or capacity)",
            "set consumableCapacity.capacity (docs/profile.md)",
        )
    slices = list_slices(k8s, workload.profile.driver, node)
    attach_yaml(f"ResourceSlices of {node}", slices)
    kind_ids = workload.context.device_sets.get(CONSUMABLE_KIND) or frozenset()
    devices = [d for d in shared_devices(slices, workload.profile.driver) if d.id in kind_ids]
    if not devices:
        not_applicable(  # the run's start saw one there: the driver withdrew it since
            f"{node} publishes no device with allowMultipleAllocations: true any more"
        )
    half, fits = _plan(devices, capacity)
    consumed = {
        d.id: use[capacity] for d in devices if (use := d.consumption({capacity: half})) is not None
    }

    def share_request() -> dict[str, Any]:
        return workload.device_request(CONSUMABLE_KIND, capacity={capacity: f"{half}"})

    holders = [f"share-{i}" for i in range(sum(fits.values()))]
    got: dict[str, AllocationResult] = {}
    for name in holders:
        # One after another: handed two pods for one shareable device at once, the v1.37.2
        # scheduler was seen to refuse the second ("cannot allocate all claims") and not retry
        # it within the 40 s wait; that race is the scheduler's, not the driver's.
        workload.claim(name, [share_request()])
        workload.pod(name, [name], node=node)
        workload.wait_running(name, abort_on_prepare_failure=True)
        results = workload.results(name)
        assert len(results) == 1, f"claim {name} asked for one device, got {results}"
        got[name] = results[0]
    _check_shares(got, fits, capacity, consumed)
    for name, result in got.items():
        workload.assert_sees_exactly(name, [result])

    # Every share is taken: one more claim must wait, unallocated, for the settle window.
    workload.claim("over", [share_request()])
    workload.pod("over", ["over"], node=node)
    condition = waits.wait_for_pod_scheduled_false(
        k8s, workload.namespace, "over", timeout=workload.timeout("claimAllocated")
    )
    waits.ensure_for(
        lambda: (workload.read_pod("over"), workload.read_claim("over")),
        lambda seen: (
            not (seen[0] or {}).get("spec", {}).get("nodeName") and not state.is_allocated(seen[1])
        ),
        describe=f"claim over to stay unallocated and its pod unbound while the "
        f"{len(holders)} shares of {capacity} {half} on {node} are held",
        duration=workload.timeout("settle"),
        show=lambda seen: {
            "pod": state.pod_summary(seen[0]),
            "claim": state.claim_summary(seen[1]),
        },
    )
    assert condition.get("reason") == "Unschedulable", (
        f"pod over: PodScheduled=False should have reason Unschedulable: {condition}"
    )

    freed = got[holders[0]].device_id
    workload.delete_pod(holders[0], wait=False)
    workload.wait_running("over", abort_on_prepare_failure=True)
    (result,) = workload.results("over")
    assert result.device_id == freed, (
        f"claim over should get the share freed on {freed}, got {result.device_id}"
    )
    workload.assert_sees_exactly("over", [result])
