"""Prove that a released device can be allocated again (DRA-DEL-*, DRA-EXT-004).

CEL cannot name a device, only describe it, so a *probe* claim asks for every device on the
device's node that looks exactly like it (`describing_selector`: all its attributes). The
probe is created while the device is still held, so the scheduler has already found it
unschedulable (PodScheduled=False) before the release: the device becoming allocatable is
then a transition the test observes, not an assumption. After the release the probe must
get the device, run, and see it through the profile's verification - a driver that keeps a
released device busy fails there.

Under xdist another test's claim may be allocated the device (or one of its look-alikes) the
moment it is freed. That proves nothing about this driver's preparation, so the probe waits
on: while other claims hold what it asks for, up to a pod's life longer (`contention_budget`).
When the device stays with them, the test is the harness's error (HarnessError naming them),
never a pass; when nobody holds it and the probe still does not get it, the test fails.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.kube.state import AllocationResult
from conformance.model.devices import PublishedDevice
from conformance.model.outcome import HarnessError
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
    """What the probe was allocated: the released device (and its look-alikes)."""

    probe_results: tuple[AllocationResult, ...]


def contention_budget(workload: Workloads) -> float:
    """How much longer the probe waits while other tests' claims hold what it asks for: one
    such claim's pod life (allocated, running, deleted)."""
    return sum(workload.timeout(n) for n in ("claimAllocated", "podRunning", "podDeleted"))


class _Contention:
    """Who else held the probe's devices during the wait, and since when nobody has."""

    def __init__(self) -> None:
        self.free_since = time.monotonic()
        self.seen: dict[tuple[str, str, str], None] = {}  # every foreign holder, in order

    def observe(self, others: Iterable[tuple[str, str, str]]) -> None:
        others = list(others)
        self.seen.update(dict.fromkeys(others))
        if others:
            self.free_since = time.monotonic()

    def free_for(self) -> float:
        return time.monotonic() - self.free_since


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
        """Wait until the probe claim holds the device, then that its pod runs and sees
        exactly what the probe was allocated. Claims other than the probe and `released_uids`
        that hold a device the probe asks for extend the wait (`contention_budget`); if they
        keep it, HarnessError. A refused prepare of the probe is the failure, unless
        `refused_prepares_expected` (the driver may refuse while the device is still prepared
        for the released claim; the kubelet then retries)."""
        with step(f"check that device {self.device.id} is allocatable again"):
            return self._wait_reallocated(released_uids, refused_prepares_expected)

    def _wait_reallocated(
        self, released_uids: Collection[str], refused_prepares_expected: bool
    ) -> Reallocation:
        workload = self.workload
        driver = workload.profile.driver
        # With nobody else holding the device, it must be the probe's within this long.
        free_timeout = workload.timeout("claimAllocated") + workload.timeout("podDeleted")
        limit = free_timeout + contention_budget(workload)
        contention = _Contention()

        def read() -> dict[str, Any]:
            probe = workload.read_claim(self.name)
            if state.is_allocated(probe):
                return {"probe": probe, "others": []}
            ours = {(probe or {}).get("metadata", {}).get("uid"), *released_uids}
            claims = all_claims(workload.k8s)
            others = {
                h: None
                for device_id in sorted(self.wanted)
                for h in holders(claims, driver, device_id)
                if h[2] not in ours
            }
            contention.observe(others)
            return {"probe": probe, "others": list(others)}

        def nobody_else(seen: dict[str, Any]) -> str | None:
            if state.is_allocated(seen["probe"]) or contention.free_for() < free_timeout:
                return None
            return (
                f"no other claim has held {sorted(self.wanted)} for "
                f"{contention.free_for():.0f}s, yet the probe claim is not allocated"
            )

        describe = (
            f"device {self.device.id} to be allocated again (probe claim "
            f"{workload.namespace}/{self.name} pinned to it)"
        )
        try:
            seen = waits.wait_until(
                read,
                lambda v: state.is_allocated(v["probe"]),
                describe=describe,
                timeout=limit,
                show=lambda v: {"probe": state.claim_summary(v["probe"]), "others": v["others"]},
                abort=nobody_else,
            )
        except waits.WaitTimeout as exc:
            if not contention.seen:
                raise
            held_by = ", ".join(f"{ns}/{name}" for ns, name, _ in contention.seen)
            raise HarnessError(
                f"cannot prove that {driver} prepares device {self.device.id} again: claims "
                f"of other tests ({held_by}) held {sorted(self.wanted)} after the release and "
                f"the probe did not get it within {limit:.0f}s; run the requirement alone "
                f"(--dra-requirement) or with fewer workers\n{exc}"
            ) from None
        results = tuple(state.allocation_results(seen["probe"]))
        got = {r.device_id for r in results}
        assert got == set(self.wanted) and all(r.driver == driver for r in results), (
            f"probe claim {self.name} should get exactly {sorted(self.wanted)} from {driver}, "
            f"got {[(r.driver, r.device_id) for r in results]}"
        )
        workload.wait_running(self.name, abort_on_prepare_failure=not refused_prepares_expected)
        workload.assert_sees_exactly(self.name, results)
        return Reallocation(results)
