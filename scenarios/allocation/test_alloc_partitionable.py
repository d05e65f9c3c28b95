"""DRA-ALLOC-016: whole partitionable devices and their partitions draw on the same shared
counters (DRAPartitionableDevices), so allocating one side keeps the other unallocated on that
node, and freed counters serve the other side again.

The test names no device: the profile's `partitionableDevices` says which class (and selector)
picks whole devices and which picks partitions; the node comes from a node lease, and the
counters from the driver's ResourceSlices on it.
"""

from __future__ import annotations

import pytest

from conformance.kube import state, waits
from conformance.kube.slices import list_slices
from conformance.model.counters import counter_sets, overdrawn
from conformance.model.outcome import not_applicable
from conformance.model.partitionable import PARTITION_KIND, WHOLE_KIND
from conformance.scenario_api.placement import devices_on, pick_node
from conformance.scenario_api.workloads import Workloads

UNSCHEDULABLE = "cannot allocate all claims"  # the DRA scheduler plugin's PodScheduled message


def _partitionable_node(workload: Workloads, lease) -> tuple[str, set[str], set[str]]:
    """The leased node, its whole devices and its partitions; not applicable (saying which)
    when the driver publishes no shared counters there or lacks either side."""
    context, driver = workload.context, workload.profile.driver
    node = pick_node(context, PARTITION_KIND, lease=lease)
    if not counter_sets(list_slices(workload.k8s, driver, node), driver):
        not_applicable(f"no ResourceSlice of {driver} on {node} publishes spec.sharedCounters")
    whole = {d.id for d in devices_on(context, node, WHOLE_KIND)}
    parts = {d.id for d in devices_on(context, node, PARTITION_KIND)}
    if not whole:
        not_applicable(f"{node} has partitions but no device of partitionableDevices.whole")
    return node, whole, parts


def _stays_unallocated(workload: Workloads, claim: str, because: str) -> None:
    """The pod of `claim` (same name) is found unschedulable for its claim, and the claim
    stays unallocated for the settle window."""

    def verdict(pod: dict | None) -> str | None:
        allocated = state.allocation_results(workload.read_claim(claim) or {})
        if allocated:
            return (
                f"claim {claim} was allocated {sorted(r.device_id for r in allocated)} while "
                f"{because}: they do not draw on the same shared counters"
            )
        return None

    cond = waits.wait_for_pod_scheduled_false(
        workload.k8s, workload.namespace, claim, timeout=workload.timeout("claimAllocated"),
        abort=verdict,
    )  # fmt: skip
    assert UNSCHEDULABLE in (cond.get("message") or ""), (
        f"pod {claim} is unschedulable for another reason than its claim while {because}: {cond}"
    )
    waits.ensure_for(
        lambda: workload.read_claim(claim),
        lambda c: not state.is_allocated(c),
        describe=f"claim {claim} stays unallocated while {because}",
        duration=workload.timeout("settle"),
        show=lambda c: (c or {}).get("status"),
    )


def _assert_within_counters(workload: Workloads, node: str, claims: list[str]) -> None:
    driver = workload.profile.driver
    allocated = [r.device_id for c in claims for r in workload.results(c)]
    problems = overdrawn(list_slices(workload.k8s, driver, node), driver, allocated)
    assert not problems, f"allocations {sorted(allocated)} overdraw shared counters: {problems}"


@pytest.mark.dra_requirement("DRA-ALLOC-016")
@pytest.mark.dra_node_exclusive(PARTITION_KIND)  # All-mode claims need every device of the node
def test_whole_device_and_its_partitions_exclude_each_other_through_shared_counters(
    workload: Workloads, device_lease
) -> None:
    node, whole, parts = _partitionable_node(workload, device_lease)

    # Whole devices first: every one of the node (allocationMode All) draws all counters.
    workload.claim("whole", [workload.device_request(WHOLE_KIND, all_devices=True)])
    workload.run("whole", ["whole"], node=node)
    got = workload.results("whole")
    assert {r.device_id for r in got} == whole, (
        f"allocationMode All on {node} got {sorted(r.device_id for r in got)}, not {sorted(whole)}"
    )
    workload.assert_sees_exactly("whole", got)
    workload.claim("part", kind=PARTITION_KIND)
    workload.pod("part", ["part"], node=node)
    _stays_unallocated(workload, "part", f"the whole devices {sorted(whole)} are allocated")
    _assert_within_counters(workload, node, ["whole"])

    # Freed counters: the waiting partition is allocated once the whole devices are released.
    workload.delete_pod("whole")
    workload.delete_claim("whole", wait=True)
    workload.wait_running("part")
    [part] = workload.results("part")
    assert part.device_id in parts, f"claim part got {part.device_id}, not a partition of {node}"
    workload.assert_sees_exactly("part", [part])

    # The reverse: one partition allocated keeps the whole devices (All of them) unallocated.
    workload.claim("whole-again", [workload.device_request(WHOLE_KIND, all_devices=True)])
    workload.pod("whole-again", ["whole-again"], node=node)
    _stays_unallocated(workload, "whole-again", f"partition {part.device_id} is allocated")
    _assert_within_counters(workload, node, ["part"])
    workload.delete_pod("part")
    workload.delete_claim("part", wait=True)
    workload.wait_running("whole-again")
    assert {r.device_id for r in workload.results("whole-again")} == whole
    _assert_within_counters(workload, node, ["whole-again"])
