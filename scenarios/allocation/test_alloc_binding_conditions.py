"""DRA-ALLOC-018, DRA-ALLOC-019: binding conditions (KEP-5007, DRADeviceBindingConditions).

A device published with bindingConditions keeps kube-scheduler in PreBind, the pod unbound,
until the driver sets each of them True in the claim's status.devices entry for the device;
the scheduler re-reads the claim every 5 s. One of its bindingFailureConditions True instead
makes the scheduler give up (FailedScheduling "device binding failed"), deallocate the claim
and allocate it afresh, and the driver must report again for that new allocation.

Both tests read the pod, then the claim, on every poll (`BindingTrail`): a pod already bound
while the claim read after it still waits was bound too early. The binding timeout (600 s by
default) is left out: it judges the scheduler and costs ten minutes.
"""

from __future__ import annotations

from typing import Any

import pytest
from binding_status_checks import (
    SCHEDULER_POLL_S,
    BindingTrail,
    WaitingDevice,
    allocated_at,
    condition_of,
    entry_of,
    failed_conditions,
    missing_conditions,
    waiting_devices,
)

from conformance.faults import DeviceRef, FaultKind, ProfileFaults
from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.model.devices import PublishedDevice
from conformance.model.outcome import not_applicable
from conformance.model.profile import BINDING_KIND
from conformance.observe.steps import attach_yaml
from conformance.run.lease import DeviceLease
from conformance.scenario_api.workloads import Workloads

PENDING_EVENT = "BindingConditionsPending"
BINDING_FAILED = "device binding failed"  # kube-scheduler's ErrDeviceBindingFailed


def _binding_devices(workload: Workloads, node: str | None) -> dict[str, PublishedDevice]:
    """The devices of the kind published now, on `node` (None: on any node)."""
    kind_ids = workload.context.device_sets.get(BINDING_KIND) or frozenset()
    found = {
        i: d for i, d in workload.live_devices().items() if i in kind_ids and node in (None, d.node)
    }
    if not found:
        not_applicable(  # the run's start saw one: the driver withdrew it since
            f"{node or 'no node'} publishes no device with bindingConditions any more"
        )
    return found


def _copied(claim: dict[str, Any], published: dict[str, PublishedDevice], driver: str) -> None:
    """The results carry the device's conditions from the slice, and a timestamp the
    scheduler's timeout counts from."""
    results = state.allocation_results(claim)
    assert len(results) == 1, f"the claim asked for one device, got {results}"
    (result,) = results
    device = published.get(result.device_id)
    assert device is not None, (
        f"allocated {result.device_id}, not a device with bindingConditions on the node "
        f"{sorted(published)} (bindingConditions.class must select only those)"
    )
    waiting = {d.id: d for d in waiting_devices(claim, driver)}
    got = waiting.get(result.device_id)
    want = (device.binding_conditions, device.binding_failure_conditions)
    assert got is not None and (got.conditions, got.failure_conditions) == want, (
        f"the allocation result of {result.device_id} should carry bindingConditions "
        f"{list(want[0])} and bindingFailureConditions {list(want[1])} as published, got "
        f"{(list(got.conditions), list(got.failure_conditions)) if got else 'none'}"
    )
    assert allocated_at(claim), (
        "status.allocation.allocationTimestamp is not set (the scheduler sets it when the "
        "DRADeviceBindingConditions gate is on)"
    )


def _watch(workload: Workloads, name: str, trail: BindingTrail) -> Any:
    def read() -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        pod = workload.read_pod(name)  # the pod first: see BindingTrail
        claim = workload.read_claim(name)
        trail.record(pod, claim)
        return pod, claim

    return read


def _show(seen: tuple[dict[str, Any] | None, dict[str, Any] | None]) -> dict[str, Any]:
    return {"pod": state.pod_summary(seen[0]), "claim": state.claim_summary(seen[1])}


def _reported(claim: dict[str, Any] | None, device: WaitingDevice) -> bool:
    return not missing_conditions(claim, device) and not failed_conditions(claim, device)


def _wait_reported(
    workload: Workloads, name: str, trail: BindingTrail, *, what: str, new: bool = False
) -> tuple[dict[str, Any], WaitingDevice]:
    """Until the claim's allocation (with `new`: one after the first) has every binding
    condition True in its entry."""
    driver = workload.profile.driver

    def done(seen: tuple[dict[str, Any] | None, dict[str, Any] | None]) -> bool:
        claim = seen[1]
        at = allocated_at(claim)
        if at is None or (new and not trail.reallocated):
            return False
        devices = waiting_devices(claim, driver)
        return bool(devices) and all(_reported(claim, d) for d in devices)

    _, claim = waits.wait_until(
        _watch(workload, name, trail),
        done,
        describe=f"{driver} to set every bindingCondition True in the status.devices entry of "
        f"{what} of claim {name} (the pod waits unbound until it does)",
        timeout=workload.timeout("converge") + 2 * SCHEDULER_POLL_S,
        show=_show,
    )
    assert claim is not None
    (device,) = waiting_devices(claim, driver)
    return claim, device


def _still_true(workload: Workloads, name: str, device: WaitingDevice) -> None:
    """Once the pod runs (prepared), the entry still has every binding condition True: a
    later status write of the driver must not drop them."""
    claim = workload.read_claim(name)
    attach_yaml(f"ResourceClaim {name} (pod running)", claim)
    missing = missing_conditions(claim, device)
    assert not missing, (
        f"{workload.profile.driver} dropped binding condition(s) {missing} of {device.id} from "
        f"claim {name}'s status.devices once the pod ran: "
        f"{(entry_of(claim, device) or {}).get('conditions')}"
    )


def _no_early_binding(trail: BindingTrail) -> None:
    assert not trail.bound_early, "the pod was bound before the binding conditions were met: " + (
        "; ".join(trail.bound_early)
    )


@pytest.mark.dra_requirement("DRA-ALLOC-018")
@pytest.mark.dra_devices(BINDING_KIND)
def test_pod_binds_once_the_driver_reports_the_binding_conditions(
    workload: Workloads, k8s: K8sClients, device_lease: DeviceLease
) -> None:
    node = device_lease.node
    assert node is not None
    published = _binding_devices(workload, node)
    driver = workload.profile.driver
    trail = BindingTrail(driver)

    workload.claim("attached", kind=BINDING_KIND)
    workload.pod("attached", ["attached"], node=node)
    claim = workload.wait_allocated("attached")
    _copied(claim, published, driver)

    claim, device = _wait_reported(workload, "attached", trail, what="its device")
    entry = entry_of(claim, device) or {}
    for name in device.conditions:
        condition = condition_of(entry, name) or {}
        assert condition.get("reason") and condition.get("lastTransitionTime"), (
            f"binding condition {name} of {device.id} has no reason or lastTransitionTime: "
            f"{condition}"
        )
    waits.wait_for_event(
        k8s,
        workload.namespace,
        reason=PENDING_EVENT,
        kind="Pod",
        name="attached",
        timeout=workload.timeout("converge"),
    )
    workload.wait_running("attached", timeout=workload.timeout("podRunning") + SCHEDULER_POLL_S)
    _no_early_binding(trail)
    _still_true(workload, "attached", device)
    workload.assert_sees_exactly("attached", workload.results("attached"))


@pytest.mark.dra_requirement("DRA-ALLOC-019")
# Every such device: each fails its next allocation once, so whichever the scheduler picks
# first (and next) fails once, and no other test meets a failing device.
@pytest.mark.dra_devices(BINDING_KIND, count="all")
def test_failed_binding_is_allocated_again_and_reported(
    workload: Workloads, k8s: K8sClients, faults: ProfileFaults
) -> None:
    published = _binding_devices(workload, None)
    failing = {i: d for i, d in published.items() if d.binding_failure_conditions}
    if not failing:
        not_applicable(
            "no device with bindingConditions publishes bindingFailureConditions: the driver "
            "cannot report a binding failure"
        )
    driver = workload.profile.driver
    injector = faults.new(FaultKind.FAIL_BINDING)
    for device in failing.values():
        injector.fail_binding(DeviceRef.of(driver, device), count=1)
    trail = BindingTrail(driver)

    workload.claim("retried", kind=BINDING_KIND)
    workload.pod("retried", ["retried"])
    first = workload.wait_allocated("retried")
    _copied(first, published, driver)
    trail.record(None, first)

    failed = waits.wait_for_event(
        k8s,
        workload.namespace,
        reason="FailedScheduling",
        kind="Pod",
        name="retried",
        message_contains=BINDING_FAILED,
        timeout=workload.timeout("converge") + 2 * SCHEDULER_POLL_S,
    )
    attach_yaml("FailedScheduling event (binding failed)", failed)
    claim, device = _wait_reported(workload, "retried", trail, what="the new allocation", new=True)
    assert trail.reallocated, (
        f"the claim kept its first allocation ({allocated_at(first)}) after the binding failed"
    )
    workload.wait_running("retried", timeout=workload.timeout("podRunning") + SCHEDULER_POLL_S)
    _no_early_binding(trail)
    _still_true(workload, "retried", device)
    workload.assert_sees_exactly("retried", workload.results("retried"))
