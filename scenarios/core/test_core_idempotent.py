"""DRA-CORE-006: a container restart inside a running pod sees the same device and causes no
prepare error (the container runtime resolves the driver's CDI devices again at every
container start, so what the driver prepared must stay valid for the claim's lifetime)."""

from __future__ import annotations

import pytest

from conformance.scenario_api.workloads import PREPARE_FAILED, Workloads, restart_count


@pytest.mark.dra_requirement("DRA-CORE-006")
@pytest.mark.dra_devices("default")
def test_container_restart_sees_the_same_device(workload: Workloads) -> None:
    workload.claim("claim")
    workload.run("pod", ["claim"], abort_on_prepare_failure=True)
    (result,) = workload.results("claim")
    before = workload.assert_sees_exactly("pod", [result])

    pod = workload.restart_container("pod")
    assert restart_count(pod) == 1, f"restartCount should be 1: {pod['status']}"
    after = workload.seen("pod")
    assert after == before.seen, (
        f"after the restart the container sees {sorted(after)}, before it saw "
        f"{sorted(before.seen)} (allocated: {result.device_id})"
    )
    assert workload.results("claim") == [result], "the claim's allocation changed"
    failures = workload.warning_events(PREPARE_FAILED, "Pod", "pod")
    assert not failures, f"{PREPARE_FAILED} events for the pod: {failures}"
