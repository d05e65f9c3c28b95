"""DRA-LOSS-004: device health reported by the driver reaches the pod status
(containerStatuses[].allocatedResourcesStatus, KEP-4680)."""

from __future__ import annotations

import re

import pytest

from conformance.faults import DeviceRef, FaultKind
from conformance.kube import state, waits

# v1.37 kubelet (pkg/kubelet/cm/dra/manager.go): resourceID is the device's first CDI device
# ID when the driver returned one, else <driver>/<pool>/<device>.
CDI_DEVICE_ID = re.compile(r"^[a-z0-9.-]+/[a-zA-Z0-9._-]+=[a-zA-Z0-9._:-]+$")


def _entry(pod, container: str, name: str) -> dict | None:
    for status in (pod or {}).get("status", {}).get("containerStatuses") or ():
        if status.get("name") == container:
            for entry in status.get("allocatedResourcesStatus") or ():
                if entry.get("name") == name:
                    return entry
    return None


def _health(pod, container: str, name: str) -> list[str]:
    entry = _entry(pod, container, name) or {}
    return [r.get("health") for r in entry.get("resources") or ()]


@pytest.mark.dra_requirement("DRA-LOSS-004")
@pytest.mark.dra_devices("default")
def test_unhealthy_device_shows_in_allocated_resources_status(dra_context, k8s, workload, faults):
    driver = dra_context.profile.driver
    workload.claim("watched")
    workload.run("patient", ["watched"])
    [result] = workload.results("watched")
    entry_name = "claim:watched"  # claim:<pod.spec.resourceClaims[].name>

    def read():
        return state.read_pod(k8s, workload.namespace, "patient")

    def show(pod):
        return (state.pod_summary(pod) or {}).get("containerStatuses")

    device = DeviceRef.of(driver, dra_context.device(result.device_id))
    injector = faults.new(FaultKind.UNHEALTHY)
    injector.mark_unhealthy(device)
    pod = waits.wait_until(
        read,
        lambda p: _health(p, "main", entry_name) == ["Unhealthy"],
        describe=f"containerStatuses[main].allocatedResourcesStatus[{entry_name}] to list "
        f"device {result.device_id} as Unhealthy",
        timeout=dra_context.timeout("default"),
        show=show,
    )
    [resource] = (_entry(pod, "main", entry_name) or {})["resources"]
    resource_id = resource.get("resourceID", "")
    assert resource_id == f"{driver}/{result.pool}/{result.device}" or (
        CDI_DEVICE_ID.match(resource_id)
    ), (
        f"resourceID {resource_id!r} is neither {driver}/{result.pool}/{result.device} nor a "
        "CDI device ID"
    )

    injector.recover(device)  # the profile's faults.recover, or the undo of faults.unhealthy
    waits.wait_until(
        read,
        lambda p: _health(p, "main", entry_name) == ["Healthy"],
        describe=f"allocatedResourcesStatus[{entry_name}] to be Healthy again after recovery",
        timeout=dra_context.timeout("default"),
        show=show,
    )
    assert state.pod_phase(read()) == "Running"
