"""DRA-LOSS-003: a device the driver withdraws from its ResourceSlices is never allocated to a
new claim, and the pods already using it keep running."""

from __future__ import annotations

import pytest

from conformance.faults import DeviceRef, FaultKind
from conformance.kube import slices, state, waits
from conformance.scenario_api.disruption import (
    PodBaseline,
    disturbances,
    ensure_claim_waits_and_pod_undisturbed,
)
from conformance.scenario_api.placement import devices_on, pick_node


def _wait_published(dra_context, k8s, node: str, present: set[str], absent: set[str]) -> None:
    driver = dra_context.profile.driver
    waits.wait_until(
        lambda: {d.id for d in slices.current_devices(k8s, driver, node)},
        lambda ids: present <= ids and not (absent & ids),
        describe=f"{driver}'s ResourceSlices for {node} to publish {sorted(present)} and "
        f"not {sorted(absent)}",
        timeout=dra_context.timeout("slicesPublished"),
        show=sorted,
    )


@pytest.mark.dra_requirement("DRA-LOSS-003")
@pytest.mark.dra_node_exclusive(at_least=2)  # withdraws every device of the node
def test_withdrawn_device_is_never_allocated_and_its_user_keeps_running(
    dra_context, k8s, workload, faults, device_lease
):
    driver = dra_context.profile.driver
    node = pick_node(dra_context, at_least=2, lease=device_lease)
    devices = devices_on(dra_context, node)
    workload.claim("in-use")
    user = workload.run("user", ["in-use"], node=node)
    [held] = workload.results("in-use")
    baseline = PodBaseline.of(user)
    others = [d for d in devices if d.id != held.device_id]

    # Withdraw every device of the node: the one in use and the free ones a claim could get.
    faults.new(FaultKind.WITHDRAW).withdraw(
        DeviceRef.of(driver, dra_context.device(held.device_id))
    )
    withdraw_others = faults.new(FaultKind.WITHDRAW)
    for device in others:
        withdraw_others.withdraw(DeviceRef.of(driver, device))
    _wait_published(dra_context, k8s, node, set(), {d.id for d in devices})

    workload.claim("newcomer")
    workload.pod("newcomer", ["newcomer"], node=node)
    waits.wait_for_pod_scheduled_false(
        k8s, workload.namespace, "newcomer", timeout=dra_context.timeout("default")
    )

    ensure_claim_waits_and_pod_undisturbed(
        k8s,
        workload.namespace,
        "newcomer",
        baseline,
        duration=dra_context.timeout("settle"),
        while_=f"every device of {node} is withdrawn",
    )
    claim = workload.read_claim("in-use")
    assert [r.device_id for r in state.allocation_results(claim)] == [held.device_id]

    # Control: bring the free devices back; the newcomer gets one of them, never the other.
    withdraw_others.restore()
    _wait_published(dra_context, k8s, node, {d.id for d in others}, {held.device_id})
    workload.wait_allocated("newcomer")
    [got] = workload.results("newcomer")
    assert got.device_id in {d.id for d in others}, (
        f"newcomer (pinned to {node}) got {got.device_id}; expected one of the restored "
        f"devices {sorted(d.id for d in others)}, never the withdrawn {held.device_id}"
    )
    workload.wait_running("newcomer")
    workload.assert_sees_exactly("newcomer", [got])
    assert not disturbances(baseline, workload.read_pod("user"))
