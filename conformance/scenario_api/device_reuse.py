"""Prove that a released device can be allocated again (DRA-DEL-*, DRA-EXT-004).

CEL cannot name a device, only describe it, so a *probe* claim asks for every device on the
device's node that looks exactly like it (`describing_selector`: all its attributes). The
probe is created while the device is still held, so the scheduler has already found it
unschedulable (PodScheduled=False) before the release: the device becoming allocatable is
then a transition the test observes, not an assumption. After the release the probe must
get the device, run, and see it through the profile's verification - a driver that keeps a
released device busy fails there.

Under xdist another test may be scheduled onto the device the moment it is freed; that too
proves it was allocatable again, so the wait accepts a claim the test does not own holding
the device (reported in the result).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.kube.state import AllocationResult
from conformance.model.devices import PublishedDevice
from conformance.report.steps import step
from conformance.scenario_api.workloads import Workloads, describing_selector, look_alikes


def holders(
    claims: Iterable[Mapping[str, Any]], driver: str, device_id: str
) -> list[tuple[str, str, str]]:
    """(namespace, name, uid) of the claims whose allocation includes `device_id` of `driver`."""
    out = []
    for claim in claims:
        results = state.allocation_results(claim)
        if any(r.driver == driver and r.device_id == device_id for r in results):
            meta = claim.get("metadata") or {}
            out.append((meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", "")))
    return out


def all_claims(k8s: K8sClients) -> list[dict[str, Any]]:
    return [k8s.to_dict(c) for c in k8s.resource.list_resource_claim_for_all_namespaces().items]


@dataclass(frozen=True)
class Reallocation:
    """How the released device was seen allocatable again."""

    probe_results: tuple[AllocationResult, ...]  # empty when another test got the device
    taken_by: tuple[str, str, str] | None = None  # (namespace, name, uid) of a foreign claim


@dataclass
class ReuseProbe:
    """A claim + pod that only `device` (or its look-alikes on the same node) can satisfy."""

    workload: Workloads
    name: str
    device: PublishedDevice
    wanted: frozenset[str]  # device ids the probe claim asks for (the device + look-alikes)

    @classmethod
    def start(
        cls, workload: Workloads, device_id: str, *, kind: str = "default", name: str = "probe"
    ) -> ReuseProbe:
        """Create the probe claim and pod (call while the device is still held)."""
        device = workload.context.device(device_id)
        assert device is not None, (
            f"device {device_id} is not among the devices the driver published when the run "
            "started, so no claim can be pinned to it"
        )
        # A device without attributes looks like every device of its kind on its node: the
        # probe then asks for all of them, which only the released device can complete.
        selector = describing_selector(device)
        kind_devices = workload.context.devices_of_kind(kind) or workload.context.devices
        alikes = look_alikes(device, kind_devices)
        with step(f"create probe claim and pod {workload.ref(name)} pinned to device {device.id}"):
            workload.claim(
                name,
                [
                    workload.device_request(
                        kind, selectors=[selector] if selector else [], count=1 + len(alikes)
                    )
                ],
            )
            workload.pod(name, [name], node=device.node)
        return cls(workload, name, device, frozenset([device.id, *alikes]))

    def assert_blocked(self) -> dict[str, Any]:
        """The scheduler tried and could not place the probe: the device is in use."""
        with step(
            f"check that probe {self.name} cannot be scheduled while {self.device.id} is held"
        ):
            return self._assert_blocked()

    def _assert_blocked(self) -> dict[str, Any]:
        condition = waits.wait_for_pod_scheduled_false(
            self.workload.k8s,
            self.workload.namespace,
            self.name,
            timeout=self.workload.timeout("claimAllocated"),
        )
        claim = self.workload.read_claim(self.name)
        assert not state.is_allocated(claim), (
            f"probe claim {self.name} for held device {self.device.id} got allocated: "
            f"{state.claim_summary(claim)}"
        )
        return condition

    def wait_reallocated(
        self, *, released_uids: Collection[str] = (), refused_prepares_expected: bool = False
    ) -> Reallocation:
        """Wait until the probe claim holds the device (or a claim that is neither the probe
        nor one of `released_uids` does), then, for the probe, that its pod runs and sees
        exactly what the probe was allocated. A refused prepare of the probe is the failure,
        unless `refused_prepares_expected` (the driver may refuse while the device is still
        prepared for the released claim; the kubelet then retries)."""
        with step(f"check that device {self.device.id} is allocatable again"):
            return self._wait_reallocated(released_uids, refused_prepares_expected)

    def _wait_reallocated(
        self, released_uids: Collection[str], refused_prepares_expected: bool
    ) -> Reallocation:
        workload = self.workload
        driver = workload.profile.driver

        def read() -> dict[str, Any]:
            probe = workload.read_claim(self.name)
            if state.is_allocated(probe):
                return {"probe": probe, "others": []}
            ours = {(probe or {}).get("metadata", {}).get("uid"), *released_uids}
            others = [
                h
                for h in holders(all_claims(workload.k8s), driver, self.device.id)
                if h[2] not in ours
            ]
            return {"probe": probe, "others": others}

        seen = waits.wait_until(
            read,
            lambda v: state.is_allocated(v["probe"]) or bool(v["others"]),
            describe=f"device {self.device.id} to be allocated again (probe claim "
            f"{workload.namespace}/{self.name} pinned to it)",
            timeout=workload.timeout("claimAllocated") + workload.timeout("podDeleted"),
            show=lambda v: {"probe": state.claim_summary(v["probe"]), "others": v["others"]},
        )
        if not state.is_allocated(seen["probe"]):
            return Reallocation((), taken_by=tuple(seen["others"][0]))
        results = tuple(state.allocation_results(seen["probe"]))
        got = {r.device_id for r in results}
        assert got == set(self.wanted) and all(r.driver == driver for r in results), (
            f"probe claim {self.name} should get exactly {sorted(self.wanted)} from {driver}, "
            f"got {[(r.driver, r.device_id) for r in results]}"
        )
        workload.wait_running(self.name, abort_on_prepare_failure=not refused_prepares_expected)
        workload.assert_sees_exactly(self.name, results)
        return Reallocation(results)
