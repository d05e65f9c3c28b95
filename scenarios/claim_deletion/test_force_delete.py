"""DRA-DEL-006: force-deleting a pod does not free its device before the node unprepared it.

A force delete removes the pod object at once, while the kubelet is still stopping its
containers; the claim controller sees the pod gone. The kubelet's own counter of successful
NodeUnprepareResources calls to the driver (its /metrics, read through the API server) says
when the node let go. Each observation reads the claims first and the counter after, so
"allocated elsewhere while the counter had not moved" proves the order, it does not guess it.
"""

from __future__ import annotations

from typing import Any

import pytest
from deletion_checks import kubelet_unprepare_calls, single_result, uid

from conformance.device_reuse import ReuseProbe, all_claims, holders
from conformance.kube import waits
from conformance.kube.client import K8sClients
from conformance.workloads import Workloads


@pytest.mark.requirement("DRA-DEL-006")
@pytest.mark.devices("default")
def test_force_deleted_pod_device_not_reallocated_before_unprepare(
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

    def observe() -> dict[str, Any]:
        elsewhere = [
            h for h in holders(all_claims(k8s), driver, device.device_id) if h[2] != held_uid
        ]
        calls = kubelet_unprepare_calls(k8s, node, driver)  # read after the claims
        return {"allocated to": elsewhere, "unprepare calls": calls, "before": before}

    def too_early(v: dict[str, Any]) -> str | None:
        if v["allocated to"] and v["unprepare calls"] <= before:
            return (
                f"device {device.device_id} of the force-deleted pod was allocated to "
                f"{v['allocated to']} before the kubelet on {node} had unprepared it "
                f"(successful NodeUnprepareResources calls still {v['unprepare calls']})"
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
    probe.wait_reallocated(released_uids={held_uid})
