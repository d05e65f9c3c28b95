"""DRA-EXT-004: the claim the scheduler made for an extended-resource request goes with its
pod (garbage-collected through its owner reference) and its device is free again."""

from __future__ import annotations

import pytest
from extended_checks import extended_pod, special_claim

from conformance.kube import waits
from conformance.scenario_api.device_reuse import ReuseProbe
from conformance.scenario_api.workloads import Workloads

KIND = "extended-resource"


@pytest.mark.dra_requirement("DRA-EXT-004")
@pytest.mark.dra_devices(KIND, guard=True)  # the reuse probe's devices are the test's alone
def test_special_claim_deleted_with_pod_and_device_freed(workload: Workloads) -> None:
    extended = workload.profile.extended_resource
    extended_pod(workload, "user", extended.name, 1)
    pod = workload.wait_running("user")
    claim, results = special_claim(workload, pod, extended.name, extended.device_class, 1)
    claim_name = claim["metadata"]["name"]
    probe = ReuseProbe.start(workload, results[0].device_id, kind=KIND)
    probe.assert_blocked()

    workload.delete_pod("user")
    waits.wait_for_deleted(
        lambda: workload.read_claim(claim_name),
        describe=f"special ResourceClaim {workload.namespace}/{claim_name} of the deleted pod",
        timeout=workload.timeout("podDeleted"),
    )
    probe.wait_reallocated(released_uids={claim["metadata"]["uid"]})
