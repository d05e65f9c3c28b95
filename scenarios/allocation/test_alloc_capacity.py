"""DRA-ALLOC-002: a capacity comparison allocates only devices with enough capacity, and a
claim stays unallocated while no free device has enough.

The test leases one node whole and pins its pods there. The threshold N is the largest
capacity the driver publishes on that node, so exactly the node's biggest devices qualify,
and its pods hold all of them.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from kubernetes.utils import parse_quantity

from conformance.cel.selection import matching_devices
from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.model.cel import capacity_at_least
from conformance.run.lease import DeviceLease
from conformance.scenario_api.workloads import Workloads


@pytest.mark.dra_requirement("DRA-ALLOC-002")
@pytest.mark.dra_node_exclusive  # every biggest device of the node (docstring)
def test_capacity_selector_allocates_only_devices_with_enough(
    workload: Workloads, k8s: K8sClients, device_lease: DeviceLease
) -> None:
    node = device_lease.node
    capacity = workload.profile.capacity
    # The catalog gates it on the profile's capacity (gates.profile_fields): devices without
    # capacity are legal, and the requirement is not applicable to them.
    assert capacity, "DRA-ALLOC-002 ran without the profile's capacity"
    kind_ids = workload.context.device_sets["default"]
    live = workload.live_devices()
    on_node = [d for i, d in live.items() if d.node == node and i in kind_ids]
    sizes: dict[str, Decimal] = {
        d.id: parse_quantity(d.capacity[capacity]) for d in on_node if capacity in d.capacity
    }
    assert sizes, f"no device of the default class on {node} has capacity {capacity}"
    top = max(sizes.values())
    threshold = next(live[i].capacity[capacity] for i, size in sizes.items() if size == top)
    selector = capacity_at_least(capacity, threshold)
    # The devices the selector selects, as the scheduler evaluates it.
    biggest = sorted(matching_devices([selector], on_node, workload.profile.driver))
    assert biggest, f"{selector!r} selects no device of {node}, not even its biggest"

    def capacity_request() -> dict:
        return workload.device_request(selectors=[selector])

    holders = [f"enough-{i}" for i in range(len(biggest))]
    for name in holders:
        workload.claim(name, [capacity_request()])
        workload.pod(name, [name], node=node)
    got: dict[str, str] = {}
    for name in holders:
        workload.wait_running(name, abort_on_prepare_failure=True)
        (result,) = workload.results(name)
        got[name] = result.device_id
    published = workload.live_devices()
    for name, device_id in got.items():
        have = published[device_id].capacity.get(capacity)
        assert have is not None and parse_quantity(have) >= top, (
            f"claim {name} asked for {capacity} >= {threshold} and got {device_id} with {have}"
        )
    assert sorted(got.values()) == biggest, (
        f"the {len(biggest)} claims should hold exactly the devices of {node} with "
        f"{capacity} >= {threshold} {biggest}, got {got}"
    )

    # Every device with enough capacity is taken: one more such claim must wait.
    workload.claim("waiting", [capacity_request()])
    workload.pod("waiting", ["waiting"], node=node)
    waits.wait_for_pod_scheduled_false(
        k8s, workload.namespace, "waiting", timeout=workload.timeout("claimAllocated")
    )
    claim = workload.read_claim("waiting")
    assert not state.is_allocated(claim), (
        f"no free device of {node} has {capacity} >= {threshold}, yet: {state.claim_summary(claim)}"
    )

    workload.delete_pod(holders[0], wait=False)
    workload.wait_running("waiting", abort_on_prepare_failure=True)
    assert [r.device_id for r in workload.results("waiting")] == [got[holders[0]]]
    workload.assert_sees_exactly("waiting", workload.results("waiting"))
