"""DRA-DEL-003: deleting a pod deletes the claims generated for it and frees their devices."""

from __future__ import annotations

import pytest
from deletion_checks import POD_CLAIM_NAME_ANNOTATION, assert_reserved_for, single_result, uid

from conformance.kube import waits
from conformance.kube.builders import PodClaim
from conformance.scenario_api.device_reuse import ReuseProbe
from conformance.scenario_api.workloads import Workloads

POD_CLAIMS = ("first", "second")  # two entries from one template: two generated claims


@pytest.mark.dra_requirement("DRA-DEL-003")
@pytest.mark.dra_devices("default", count=2, guard=True)  # the reuse probes' devices
def test_pod_deletion_deletes_its_generated_claims(workload: Workloads) -> None:
    ns = workload.namespace
    workload.template("per-pod")
    pod = workload.run("user", [PodClaim(n, template="per-pod") for n in POD_CLAIMS])

    statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
    generated = {s["name"]: s.get("resourceClaimName") for s in statuses}
    assert sorted(generated) == sorted(POD_CLAIMS) and all(generated.values()), (
        f"pod.status.resourceClaimStatuses should name a generated claim for each of "
        f"{list(POD_CLAIMS)}, is {statuses}"
    )
    devices, released = [], set()
    for pod_claim, claim_name in generated.items():
        claim = workload.read_claim(claim_name)
        assert claim is not None, f"generated claim {ns}/{claim_name} does not exist"
        meta = claim["metadata"]
        owners = [
            (o.get("apiVersion"), o.get("kind"), o.get("name"), o.get("uid"), o.get("controller"))
            for o in meta.get("ownerReferences") or ()
        ]
        assert owners == [("v1", "Pod", "user", uid(pod), True)], (
            f"generated claim {claim_name} should be controlled by pod user ({uid(pod)}), "
            f"ownerReferences: {meta.get('ownerReferences')}"
        )
        assert (meta.get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION) == pod_claim, (
            f"generated claim {claim_name} should carry {POD_CLAIM_NAME_ANNOTATION}={pod_claim}, "
            f"annotations: {meta.get('annotations')}"
        )
        assert_reserved_for(claim, pod)
        device = single_result(workload, claim_name)
        released.add(uid(claim))
        devices.append(device.device_id)
    probes = ReuseProbe.start_each(workload, devices)
    for probe in probes:
        probe.assert_blocked()

    workload.delete_pod("user")
    for claim_name in generated.values():
        waits.wait_for_deleted(
            lambda n=claim_name: workload.read_claim(n),
            describe=f"generated ResourceClaim {ns}/{claim_name} of the deleted pod",
            timeout=workload.timeout("podDeleted"),
        )
    for probe in probes:
        probe.wait_reallocated(released_uids=released)
