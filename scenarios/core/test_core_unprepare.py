"""DRA-CORE-005: after its pod is deleted a claim is unprepared and deallocated, its device
can be allocated to and prepared for a new claim, and the claim itself, used again, is
prepared for its new allocation (a driver that kept the old preparation shows the old
device there)."""

from __future__ import annotations

import time
from collections.abc import Collection

import pytest

from conformance.kube.state import AllocationResult
from conformance.report import record_metric
from conformance.scenario_api.device_reuse import ReuseProbe
from conformance.scenario_api.workloads import Workloads


def same_node(workload: Workloads, used: AllocationResult, held: Collection[str]) -> str | None:
    """The node of the device in use, when it has a device of the class that `held` does not
    include (else the claim must be allowed to move)."""
    device = workload.context.device(used.device_id)
    if device is None or device.node is None:
        return None
    devices = workload.context.devices_of_kind("default") or workload.context.devices
    free = [d for d in devices if d.node == device.node and d.id not in held]
    return device.node if free else None


@pytest.mark.dra_requirement("DRA-CORE-005")
# across nodes: a device without attributes is probed with all its look-alikes on the node, so
# the claim used again may have to move to another node (pinned to its node it waited there
# for the probe's devices until it timed out: the e2e test driver in CI)
# guard: the probe's devices are the test's alone, so it gets the released device itself
@pytest.mark.dra_devices("default", count=2, across_nodes=True, guard=True)
def test_deleted_pod_releases_its_device_for_reuse(
    workload: Workloads, request: pytest.FixtureRequest
) -> None:
    workload.claim("first")
    workload.run("first", ["first"], abort_on_prepare_failure=True)
    (used,) = workload.results("first")
    workload.assert_sees_exactly("first", [used])
    claim_uid = workload.read_claim("first")["metadata"]["uid"]  # type: ignore[index]

    # Queued while the device is held, so "allocatable again" is a transition we observe.
    probe = ReuseProbe.start(workload, used.device_id)
    probe.assert_blocked()

    deleted_at = time.monotonic()
    # The kubelet lets the pod's deletion complete only after NodeUnprepareResources
    # succeeded, so the pod disappearing is the proof of the unprepare.
    workload.delete_pod("first")
    claim = workload.wait_deallocated("first")
    record_metric(request, "pod_deleted_to_device_free", time.monotonic() - deleted_at)
    assert claim["metadata"]["uid"] == claim_uid
    unprepare_errors = [
        {k: e.get(k) for k in ("reason", "message")}
        for e in workload.events("Pod", "first")
        if e.get("type") == "Warning"
        and "unprepare" in f"{e.get('reason')} {e.get('message')}".lower()
    ]
    assert not unprepare_errors, f"unprepare failures reported: {unprepare_errors}"

    reallocation = probe.wait_reallocated(released_uids=[claim_uid])
    # A device without attributes is probed with all its look-alikes on the node, which the
    # probe then holds too.
    held = {r.device_id for r in reallocation.probe_results} | {used.device_id}

    # The device is held again; the released claim must now be prepared afresh for
    # whatever it is allocated next - on the same node, by the same driver instance that
    # prepared it before (another node's instance never saw it).
    workload.run(
        "again", ["first"], node=same_node(workload, used, held), abort_on_prepare_failure=True
    )
    (now,) = workload.results("first")
    assert now.device_id != used.device_id, (
        f"claim first was allocated {now.device_id} again although the probe claim holds it"
    )
    workload.assert_sees_exactly("again", [now])
