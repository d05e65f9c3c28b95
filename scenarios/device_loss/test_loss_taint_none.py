"""A taint of effect None is informational (DRA-LOSS-013): the driver publishes it as such in
its ResourceSlice, the scheduler still allocates the device to claims without a toleration,
and the eviction controller leaves the pods using it alone. Drivers use it to report a
condition (a degraded device, planned maintenance) without taking the device away.

The scenario taints every device of a leased node None through the profile's driver-taint
fault: the device a running pod holds, and the free ones, so a new claim pinned to the node
can only get a tainted device."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from conformance.faults import DeviceRef
from conformance.kube import state, waits
from conformance.kube.slices import current_devices
from conformance.model.devices import PublishedDevice
from conformance.observe.steps import step
from conformance.scenario_api.disruption import PodBaseline, disturbances
from conformance.scenario_api.placement import devices_on, pick_node

TAINT_KEY = "dra-conformance.io/device-loss"
TAINT_VALUE = "informational"
NONE_TAINT = (TAINT_KEY, TAINT_VALUE, "None")


@pytest.mark.dra_requirement("DRA-LOSS-013")
@pytest.mark.dra_node_exclusive(at_least=2)  # the driver taints every device of the node
def test_none_taint_the_driver_publishes_keeps_allocations_and_pods_going(
    dra_context, k8s, workload, driver_taints, device_lease
):
    driver = dra_context.profile.driver
    node = pick_node(dra_context, at_least=2, lease=device_lease)
    devices = devices_on(dra_context, node)
    workload.claim("in-use")
    user = workload.run("user", ["in-use"], node=node)
    [held] = workload.results("in-use")
    baseline = PodBaseline.of(user)

    # Returns per device once the slice shows the taint with effect None (a driver that
    # publishes another effect fails here, naming it).
    for device in devices:
        driver_taints.taint(DeviceRef.of(driver, device), TAINT_KEY, TAINT_VALUE, effect="None")

    # Allocation goes on: every device of the node carries the taint, and the claim has no
    # toleration, so only a taint that does not count lets it be allocated.
    workload.claim("newcomer")
    workload.pod("newcomer", ["newcomer"], node=node)
    _wait_allocated_despite_taint(workload, "newcomer", node)
    [got] = workload.results("newcomer")
    assert got.driver == driver and got.device_id in {d.id for d in devices}, (
        f"claim newcomer (pinned to {node}) got {got.driver}/{got.device_id}, not a "
        f"None-tainted device of {node}"
    )
    assert not got.tolerations, (
        f"claim newcomer asked for no toleration, yet its result records {got.tolerations}"
    )
    newcomer = workload.wait_running("newcomer")
    workload.assert_sees_exactly("newcomer", [got])

    # Running pods go on: neither the pod that held the device before the taint nor the one
    # allocated a tainted device is evicted, restarted or marked DisruptionTarget.
    baselines = [baseline, PodBaseline.of(newcomer)]
    waits.ensure_for(
        lambda: [state.read_pod(k8s, b.namespace, b.name) for b in baselines],
        lambda pods: not _problems(baselines, pods),
        describe=f"pods {baseline.name} and newcomer, whose devices carry a None taint, to "
        "keep running undisturbed",
        duration=dra_context.timeout("settle"),
        show=lambda pods: _problems(baselines, pods) or [state.pod_summary(p) for p in pods],
    )
    claim = workload.read_claim("in-use")
    assert [r.device_id for r in state.allocation_results(claim)] == [held.device_id], (
        f"claim in-use no longer holds {held.device_id}: {state.claim_summary(claim)}"
    )
    assert [r.uid for r in state.reserved_for(claim)] == [baseline.uid], (
        f"claim in-use is no longer reserved for pod user ({baseline.uid}): "
        f"{state.claim_summary(claim)}"
    )

    # Shown in the slice: the taint is still published there with effect None.
    with step(f"check that the devices of {node} still show the None taint"):
        published = current_devices(k8s, driver, node)
        missing = _without_none_taint(published, {d.id for d in devices})
        assert not missing, (
            f"the driver no longer publishes taint {TAINT_KEY}={TAINT_VALUE}:None on "
            f"{missing}: {[{'device': d.id, 'taints': d.taints} for d in published]}"
        )


def _wait_allocated_despite_taint(workload, claim: str, node: str) -> None:
    def read() -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        return workload.read_claim(claim), workload.read_pod(claim)

    def show(seen) -> dict[str, Any]:
        return {
            "claim": state.claim_summary(seen[0]),
            "PodScheduled": state.pod_condition(seen[1], "PodScheduled") if seen[1] else None,
        }

    waits.wait_until(
        read,
        lambda seen: state.is_allocated(seen[0]),
        describe=f"claim {claim} (no toleration, pinned to {node}, every device of which "
        f"carries taint {TAINT_KEY}={TAINT_VALUE}:None) to be allocated",
        timeout=workload.timeout("claimAllocated"),
        show=show,
    )


def _problems(baselines: Iterable[PodBaseline], pods: Iterable[Any]) -> list[str]:
    return [p for b, pod in zip(baselines, pods, strict=True) for p in disturbances(b, pod)]


def _without_none_taint(published: Iterable[PublishedDevice], wanted: set[str]) -> list[str]:
    present = {d.id for d in published if NONE_TAINT in d.taints}
    return sorted(wanted - present)
