"""DRA-DEL-006: after a force delete, no other pod starts with the device before the node has
unprepared it.

A force delete removes the pod object at once, while the kubelet is still stopping its
containers. The claim controller then sees the pod gone and frees the claim, and the v1.37.2
scheduler may allocate the device to another claim before the kubelet has unprepared it (the
control plane does not wait for the node). What a driver controls is the next step: it must not
prepare the device for the other claim while it is still prepared for the old one (it may wait
for the unprepare, or refuse and let the kubelet retry). The kubelet's own counter of
successful NodeUnprepareResources calls to the driver (its /metrics, read through the API
server) says when the node let go. Each observation reads the waiting pod first and the counter
after, so "started while the counter had not moved" proves the order; a start between two
observations is caught afterwards from the container's startedAt.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest
from deletion_checks import kubelet_unprepare_calls, single_result, uid

from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.scenario_api.device_reuse import ReuseProbe
from conformance.scenario_api.workloads import Workloads


@pytest.mark.dra_requirement("DRA-DEL-006")
@pytest.mark.dra_kubelet_errors(
    "a driver may refuse to prepare a device still prepared for the force-deleted pod"
)
@pytest.mark.dra_devices("default", guard=True)  # the reuse probe's devices
def test_force_deleted_pods_device_not_used_before_unprepare(
    workload: Workloads, k8s: K8sClients
) -> None:
    driver = workload.profile.driver
    workload.claim("held")
    pod = workload.run("victim", ["held"])
    node = pod["spec"]["nodeName"]
    device = single_result(workload, "held")
    held_uid = uid(workload.read_claim("held"))
    probe = ReuseProbe.start(workload, device.device_id)
    probe.assert_blocked()

    before = kubelet_unprepare_calls(k8s, node, driver)
    workload.delete_pod("victim", wait=False, grace_period=0)
    still_prepared_at = time.time()  # the latest moment the counter was seen unmoved

    def observe() -> dict[str, Any]:
        nonlocal still_prepared_at
        started = state.container_start_times(workload.read_pod(probe.name))
        read_at = time.time()
        calls = kubelet_unprepare_calls(k8s, node, driver)  # read after the pod
        if calls <= before:
            still_prepared_at = read_at
        return {"probe started": sorted(started), "unprepare calls": calls, "before": before}

    def too_early(v: dict[str, Any]) -> str | None:
        if v["probe started"] and v["unprepare calls"] <= before:
            return (
                f"pod {probe.name} (claim pinned to {device.device_id}) started containers "
                f"{v['probe started']} while the kubelet on {node} had not yet unprepared the "
                f"force-deleted pod's claim (successful NodeUnprepareResources calls still "
                f"{v['unprepare calls']}): the driver prepared a device still in use"
            )
        return None

    waits.wait_until(
        observe,
        lambda v: v["unprepare calls"] > before,
        describe=f"the kubelet on {node} to unprepare the force-deleted pod's claim",
        timeout=workload.timeout("podDeleted"),
        interval=0.2,
        abort=too_early,
    )
    probe.wait_reallocated(released_uids={held_uid}, refused_prepares_expected=True)
    early = state.containers_started_before(workload.read_pod(probe.name), still_prepared_at)
    assert not early, (
        f"pod {probe.name} started containers {sorted(early)} at "
        f"{[datetime.fromtimestamp(t).isoformat() for t in early.values()]}, before the "
        f"kubelet on {node} had unprepared the force-deleted pod's claim (counter unmoved at "
        f"{datetime.fromtimestamp(still_prepared_at).isoformat()}): the driver prepared a "
        "device still in use"
    )
