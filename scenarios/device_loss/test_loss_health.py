"""Device health as the driver reports it, and its recovery.

DRA-LOSS-004: an unhealthy device reaches the pod status
(containerStatuses[].allocatedResourcesStatus, KEP-4680). DRA-LOSS-008: so does its recovery.
DRA-LOSS-009: a taint the driver put on the unhealthy device leaves its ResourceSlice when the
device recovers (drivers that monitor health taint what they find broken; a taint left behind
keeps every new claim off a good device).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from conformance.faults import DeviceRef, FaultKind
from conformance.kube import state, waits
from conformance.kube.slices import list_slices
from conformance.model.slice_checks import newest_generation

# v1.37 kubelet (pkg/kubelet/cm/dra/manager.go): resourceID is the device's first CDI device
# ID when the driver returned one, else <driver>/<pool>/<device>.
CDI_DEVICE_ID = re.compile(r"^[a-z0-9.-]+/[a-zA-Z0-9._-]+=[a-zA-Z0-9._:-]+$")
ENTRY = "claim:watched"  # claim:<pod.spec.resourceClaims[].name>
# v1.37 kubelet (pkg/kubelet/cm/dra/plugin): it opens a health stream only on a service the
# plugin's GetInfo advertised, the newest it knows; v1.36 calls v1alpha1 whatever is advertised.
NO_STREAM_HINT = (
    "; a kubelet learns device health only from the plugin's DRAResourceHealth stream, and "
    "from 1.37 opens one only when the plugin's registration (GetInfo supported_versions) "
    "advertises v1.DRAResourceHealth or v1alpha1.DRAResourceHealth"
)

Taint = tuple[str, str, str]  # key, value, effect


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


def _show(pod):
    return (state.pod_summary(pod) or {}).get("containerStatuses")


class _WatchedDevice:
    """One pod running with one claim's device, which the test turns unhealthy."""

    def __init__(self, dra_context, k8s, workload, faults) -> None:
        self.context, self.k8s, self.workload = dra_context, k8s, workload
        workload.claim("watched")
        workload.run("patient", ["watched"])
        [self.result] = workload.results("watched")
        driver = dra_context.profile.driver
        self.device = DeviceRef.of(driver, dra_context.device(self.result.device_id))
        self.injector = faults.new(FaultKind.UNHEALTHY)

    def read_pod(self) -> dict[str, Any] | None:
        return state.read_pod(self.k8s, self.workload.namespace, "patient")

    def await_health(self, health: str, describe: str) -> dict[str, Any] | None:
        return waits.wait_until(
            self.read_pod,
            lambda p: _health(p, "main", ENTRY) == [health],
            describe=f"containerStatuses[main].allocatedResourcesStatus[{ENTRY}] to list "
            f"device {self.result.device_id} as {health}{describe}",
            timeout=self.context.timeout("default"),
            show=_show,
        )

    def taints(self) -> set[Taint]:
        """The device's taints in the newest generation of its pool's ResourceSlices."""
        pool = [
            s
            for s in list_slices(self.k8s, self.device.driver)
            if (s.get("spec") or {}).get("pool", {}).get("name") == self.device.pool
        ]
        for slice_ in newest_generation(pool) if pool else ():
            for device in slice_["spec"].get("devices") or ():
                if device.get("name") == self.device.device:
                    return {_taint(t) for t in device.get("taints") or ()}
        return set()


def _taint(raw: Mapping[str, Any]) -> Taint:
    return (str(raw.get("key")), str(raw.get("value") or ""), str(raw.get("effect")))


def _render(taints: set[Taint]) -> str:
    return ", ".join(sorted(f"{k}={v}:{e}" if v else f"{k}:{e}" for k, v, e in taints)) or "none"


@pytest.mark.dra_requirement("DRA-LOSS-004")
@pytest.mark.dra_devices("default")
def test_unhealthy_device_shows_in_allocated_resources_status(dra_context, k8s, workload, faults):
    watched = _WatchedDevice(dra_context, k8s, workload, faults)
    driver, result = watched.device.driver, watched.result
    watched.injector.mark_unhealthy(watched.device)
    pod = watched.await_health("Unhealthy", NO_STREAM_HINT)
    [resource] = (_entry(pod, "main", ENTRY) or {})["resources"]
    resource_id = resource.get("resourceID", "")
    assert resource_id == f"{driver}/{result.pool}/{result.device}" or (
        CDI_DEVICE_ID.match(resource_id)
    ), (
        f"resourceID {resource_id!r} is neither {driver}/{result.pool}/{result.device} nor a "
        "CDI device ID"
    )


@pytest.mark.dra_requirement("DRA-LOSS-008")
@pytest.mark.dra_devices("default")
def test_recovered_device_shows_healthy_again(dra_context, k8s, workload, faults):
    watched = _WatchedDevice(dra_context, k8s, workload, faults)
    watched.injector.mark_unhealthy(watched.device)
    watched.await_health("Unhealthy", NO_STREAM_HINT)
    watched.injector.recover(watched.device)  # faults.recover, or the undo of faults.unhealthy
    watched.await_health("Healthy", " again after the driver was told it recovered")
    phase = state.pod_phase(watched.read_pod())
    assert phase == "Running", f"pod patient is {phase} after its device recovered, not Running"


@pytest.mark.dra_requirement("DRA-LOSS-009")
@pytest.mark.dra_devices("default")
def test_health_taint_leaves_the_slice_when_the_device_recovers(dra_context, k8s, workload, faults):
    watched = _WatchedDevice(dra_context, k8s, workload, faults)
    name = f"device {watched.result.device_id}"
    before = watched.taints()
    watched.injector.mark_unhealthy(watched.device)
    tainted = waits.wait_until(
        watched.taints,
        lambda taints: bool(taints - before),
        describe=f"the driver to taint {name} in its ResourceSlice while it is unhealthy "
        f"(profile capability device-taints; taints before: {_render(before)})",
        timeout=dra_context.timeout("default"),
        show=_render,
    )
    health_taints = tainted - before
    watched.injector.recover(watched.device)
    waits.wait_until(
        watched.taints,
        lambda taints: not taints & health_taints,
        describe=f"the driver to remove taint {_render(health_taints)} from {name} in its "
        "ResourceSlice after the device recovered",
        timeout=dra_context.timeout("default"),
        show=_render,
    )
