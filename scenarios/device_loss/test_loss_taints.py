"""Device taints through DeviceTaintRules (resource.k8s.io), which work with every driver:
NoExecute evicts (DRA-LOSS-001), NoSchedule keeps new allocations away (DRA-LOSS-002), and a
toleration in the claim lets them through (DRA-LOSS-007). The same taints published by the
driver itself in its ResourceSlice (spec.devices[].taints, fault kind driver-taint) must do
the same (DRA-LOSS-011, DRA-LOSS-010): the bodies are shared, only the injector differs."""

from __future__ import annotations

import time

import pytest

from conformance.faults import DeviceRef
from conformance.kube import state, waits
from conformance.kube.claim_requests import toleration
from conformance.report import record_metric
from conformance.scenario_api import deployments
from conformance.scenario_api.disruption import (
    DISRUPTION_TARGET,
    PodBaseline,
    disturbances,
    ensure_claim_waits_and_pod_undisturbed,
)
from conformance.scenario_api.placement import devices_on, pick_node

TAINT_KEY = "dra-conformance.io/device-loss"
EVICTION_REASON = "DeletionByDeviceTaintManager"
EVICTION_EVENT = "DeviceTaintManagerEviction"
# The scheduler applies DeviceTaintRules from its informer; give it a moment before a pod
# whose placement must already respect them is created.
PRE_STOP_SECONDS = 3  # keeps the evicted pod's object readable after the taint manager acts


@pytest.mark.dra_requirement("DRA-LOSS-001")
@pytest.mark.dra_devices("default", count=2)
def test_noexecute_taint_evicts_the_pod_and_its_replacement_uses_another_device(
    request, dra_context, k8s, workload, taint_rules
):
    _noexecute_evicts(request, dra_context, k8s, workload, taint_rules, "DeviceTaintRule")


@pytest.mark.dra_requirement("DRA-LOSS-011")
@pytest.mark.dra_devices("default", count=2)
def test_noexecute_taint_the_driver_publishes_evicts_the_pod(
    request, dra_context, k8s, workload, driver_taints
):
    _noexecute_evicts(request, dra_context, k8s, workload, driver_taints, "taint in its slice")


def _noexecute_evicts(request, dra_context, k8s, workload, injector, how: str) -> None:
    """A NoExecute taint (put by `injector`, described by `how`) on the pod's device evicts
    the pod, the claim is deallocated, and its replacement runs on another device."""
    driver = dra_context.profile.driver
    workload.template("one-device")
    deployments.create_claim_deployment(
        workload, "evictee", template="one-device", pre_stop_seconds=PRE_STOP_SECONDS
    )
    [pod] = deployments.wait_ready_pods(workload, "evictee", 1)
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    claim = deployments.claim_of(workload, pod)
    [result] = workload.results(claim)
    assert result.driver == driver, f"claim {claim} allocated from {result.driver}, not {driver}"
    tainted = dra_context.device(result.device_id)
    assert tainted is not None, f"allocated device {result.device_id} is in no published slice"

    started = time.monotonic()
    injector.taint(DeviceRef.of(driver, tainted), TAINT_KEY, "lost", effect="NoExecute")

    def marked(p):
        cond = state.pod_condition(p, DISRUPTION_TARGET) if p else None
        return cond is not None and cond.get("status") == "True"

    evicted = waits.wait_until(
        lambda: state.read_pod(k8s, workload.namespace, name),
        marked,
        describe=f"pod {name} to get condition {DISRUPTION_TARGET}=True after a NoExecute "
        f"{how} on its device {result.device_id}",
        timeout=dra_context.timeout("eviction"),
        interval=0.5,
        show=state.pod_summary,
        abort=lambda p: "the pod disappeared without the condition" if p is None else None,
    )
    cond = state.pod_condition(evicted, DISRUPTION_TARGET) or {}
    assert cond.get("reason") == EVICTION_REASON, (
        f"pod {name}: {DISRUPTION_TARGET} reason is {cond.get('reason')!r} "
        f"({cond.get('message')}), expected {EVICTION_REASON}"
    )
    waits.wait_for_event(
        k8s, workload.namespace, reason=EVICTION_EVENT, kind="Pod", name=name,
        timeout=dra_context.timeout("default"),
    )  # fmt: skip
    waits.wait_for_deleted(
        lambda: state.read_pod(k8s, workload.namespace, name),
        describe=f"evicted pod {name}",
        timeout=dra_context.timeout("eviction"),
    )
    record_metric(request, "noexecute_taint_to_pod_gone", time.monotonic() - started)
    # A generated claim is deleted only after it was deallocated (delete-protection finalizer).
    waits.wait_for_deleted(
        lambda: workload.read_claim(claim),
        describe=f"claim {claim} of the evicted pod (deallocated, then deleted with it)",
        timeout=dra_context.timeout("podDeleted"),
    )

    [replacement] = deployments.wait_ready_pods(workload, "evictee", 1, exclude_uids={uid})
    new_claim = deployments.claim_of(workload, replacement)
    [new_result] = workload.results(new_claim)
    assert new_result.driver == driver
    assert new_result.device_id != result.device_id, (
        f"the replacement pod {replacement['metadata']['name']} was allocated the tainted "
        f"device {result.device_id}"
    )
    assert not new_result.tolerations, f"unexpected tolerations {new_result.tolerations}"
    workload.assert_sees_exactly(replacement["metadata"]["name"], [new_result])
    holders = [
        c["metadata"]["name"]
        for c in (k8s.to_dict(i) for i in k8s.resource.list_namespaced_resource_claim(
            workload.namespace).items)
        if any(r.device_id == result.device_id for r in state.allocation_results(c))
    ]  # fmt: skip
    assert not holders, f"tainted device {result.device_id} is still allocated to {holders}"


def _taint_all(injector, dra_context, devices, value, effect):
    for device in devices:
        injector.taint(
            DeviceRef.of(dra_context.profile.driver, device), TAINT_KEY, value, effect=effect
        )


def _wait_unschedulable(workload, pod: str) -> dict:
    cond = waits.wait_for_pod_scheduled_false(
        workload.k8s, workload.namespace, pod, timeout=workload.timeout("default")
    )
    assert "cannot allocate all claims" in (cond.get("message") or ""), (
        f"pod {pod} is unschedulable for another reason than its claim: {cond}"
    )
    return cond


@pytest.mark.dra_requirement("DRA-LOSS-002")
@pytest.mark.dra_node_exclusive(at_least=2)  # taints every device of the node
def test_noschedule_taint_keeps_new_allocations_off_and_running_pods_running(
    dra_context, k8s, workload, taint_rules, device_lease
):
    _noschedule_keeps_allocations_off(dra_context, k8s, workload, taint_rules, device_lease)


@pytest.mark.dra_requirement("DRA-LOSS-010")
@pytest.mark.dra_node_exclusive(at_least=2)  # the driver taints every device of the node
def test_noschedule_taint_the_driver_publishes_keeps_new_allocations_off(
    dra_context, k8s, workload, driver_taints, device_lease
):
    _noschedule_keeps_allocations_off(dra_context, k8s, workload, driver_taints, device_lease)


def _noschedule_keeps_allocations_off(dra_context, k8s, workload, injector, lease) -> None:
    """NoSchedule taints (put by `injector`) on every device of the leased node keep a new
    claim there unallocated while the pod already using one keeps running; lifting the free
    devices' taints lets the newcomer in."""
    node = pick_node(dra_context, at_least=2, lease=lease)
    devices = devices_on(dra_context, node)
    workload.claim("in-use")
    user = workload.run("user", ["in-use"], node=node)
    [held] = workload.results("in-use")
    baseline = PodBaseline.of(user)

    # Taint every device of the node: the one in use, and the free ones a new claim could get.
    _taint_all(injector, dra_context, devices, "maintenance", "NoSchedule")
    workload.claim("newcomer")
    workload.pod("newcomer", ["newcomer"], node=node)
    _wait_unschedulable(workload, "newcomer")

    ensure_claim_waits_and_pod_undisturbed(
        k8s,
        workload.namespace,
        "newcomer",
        baseline,
        duration=dra_context.timeout("settle"),
        while_=f"every device of {node} is tainted NoSchedule",
    )
    claim = workload.read_claim("in-use")
    assert [r.device_id for r in state.allocation_results(claim)] == [held.device_id]
    assert [r.uid for r in state.reserved_for(claim)] == [baseline.uid]

    # Control: lift the taints of the free devices only; the newcomer gets one of them.
    for device in devices:
        if device.id != held.device_id:
            injector.untaint(DeviceRef.of(dra_context.profile.driver, device), TAINT_KEY)
    workload.wait_allocated("newcomer")
    [got] = workload.results("newcomer")
    assert got.device_id != held.device_id, f"newcomer got the tainted device {got.device_id}"
    assert got.device_id in {d.id for d in devices}, (
        f"newcomer (pinned to {node}) got {got.device_id}, not a device of {node}"
    )
    workload.wait_running("newcomer")
    workload.assert_sees_exactly("newcomer", [got])
    assert not disturbances(baseline, workload.read_pod("user"))


@pytest.mark.dra_requirement("DRA-LOSS-007")
@pytest.mark.dra_node_exclusive  # taints every device of the node
def test_tolerated_taint_still_allocates_and_records_the_toleration(
    dra_context, workload, taint_rules, device_lease
):
    node = pick_node(dra_context, lease=device_lease)
    devices = devices_on(dra_context, node)
    _taint_all(taint_rules, dra_context, devices, "tolerated", "NoSchedule")

    # Control: without the toleration nothing on the node can be allocated.
    workload.claim("intolerant")
    workload.pod("intolerant", ["intolerant"], node=node)
    _wait_unschedulable(workload, "intolerant")

    tolerate = toleration(TAINT_KEY, operator="Equal", value="tolerated", effect="NoSchedule")
    workload.claim("tolerant", [workload.device_request(tolerations=[tolerate])])
    workload.run("tolerant", ["tolerant"], node=node)
    [got] = workload.results("tolerant")
    assert got.device_id in {d.id for d in devices}, (
        f"claim tolerant (pinned to {node}) got {got.device_id}, not a tainted device of {node}"
    )
    assert [dict(t) for t in got.tolerations] == [tolerate], (
        f"status.allocation.devices.results[].tolerations is {list(got.tolerations)}, "
        f"expected the request's toleration {tolerate}"
    )
    workload.assert_sees_exactly("tolerant", [got])
    assert not state.is_allocated(workload.read_claim("intolerant"))
