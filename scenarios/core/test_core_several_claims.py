"""DRA-CORE-007: a pod with several claims gets the devices of all of them, each container
those of the claims it references (the kubelet prepares a pod's claims of one driver in one
NodePrepareResources call, so a driver that answers only part of that call shows here).

The per-container half (a container naming only the second claim sees only its device) is
checked with the `per-container-claims` capability: a pod-scoped device, such as a network
interface moved into the pod's namespace, is seen by every container of the pod."""

from __future__ import annotations

import pytest

from conformance.kube.builders import container
from conformance.scenario_api.workloads import Workloads


@pytest.mark.dra_requirement("DRA-CORE-007")
@pytest.mark.dra_devices("default", count=2)
def test_containers_see_the_devices_of_every_claim_they_reference(workload: Workloads) -> None:
    workload.claim("first")
    workload.claim("second")
    workload.run(
        "pod",
        ["first", "second"],
        containers=[
            container("both", claims=["first", "second"]),
            container("second-only", claims=["second"]),
        ],
    )
    first, second = workload.results("first"), workload.results("second")
    assert len(first) == 1 and len(second) == 1, f"results: first {first}, second {second}"
    assert first[0].device_id != second[0].device_id, (
        f"claims first and second were both allocated {first[0].device_id}"
    )
    workload.assert_sees_exactly("pod", first + second, container="both")
    if "per-container-claims" in workload.profile.capabilities:
        workload.assert_sees_exactly("pod", second, container="second-only")
    else:  # pod-scoped devices: it may also see the other claim's, never one outside the pod
        workload.assert_sees_within("pod", second, first + second, container="second-only")
