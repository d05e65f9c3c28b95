"""DRA-CORE-003 (allocation and reservation) and DRA-CORE-004 (prepare: the container sees
exactly its device)."""

from __future__ import annotations

import pytest

from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.kube.slices import current_devices
from conformance.kube.state import ConsumerRef
from conformance.scenario_api.workloads import Workloads


@pytest.mark.dra_requirement("DRA-CORE-003")
@pytest.mark.dra_devices("default")
def test_claim_for_one_device_is_allocated_and_reserved(
    workload: Workloads, k8s: K8sClients
) -> None:
    driver = workload.profile.driver
    workload.claim("claim")
    pod = workload.pod("pod", ["claim"])
    claim = waits.wait_until(
        lambda: workload.read_claim("claim"),
        lambda c: state.is_allocated(c) and bool(state.reserved_for(c or {})),
        describe=f"ResourceClaim {workload.namespace}/claim to be allocated and reserved",
        timeout=workload.timeout("claimAllocated"),
        show=state.claim_summary,
    )
    results = state.allocation_results(claim)
    assert len(results) == 1, f"expected exactly one allocation result, got {results}"
    result = results[0]
    assert (result.request, result.driver) == ("dev", driver), result
    published = {d.id for d in current_devices(k8s, driver)}
    assert result.device_id in published, (
        f"allocated device {result.device_id} is not in any published ResourceSlice of "
        f"{driver} (published: {sorted(published)})"
    )
    assert state.reserved_for(claim) == [ConsumerRef("pods", "pod", pod["metadata"]["uid"], "")], (
        f"status.reservedFor should list exactly the pod: {state.claim_summary(claim)}"
    )


@pytest.mark.dra_requirement("DRA-CORE-004")
@pytest.mark.dra_devices("default")
def test_container_sees_exactly_its_device(workload: Workloads) -> None:
    workload.claim("claim")
    workload.run("pod", ["claim"], abort_on_prepare_failure=True)
    results = workload.results("claim")
    assert len(results) == 1, f"expected exactly one allocation result, got {results}"
    workload.assert_sees_exactly("pod", results)
