"""Prove that a released device can be allocated again (DRA-DEL-*, DRA-EXT-004).

CEL cannot name a device, only describe it, so a *probe* claim asks for every device on the
device's node that looks exactly like it (`describing_selector`: all its attributes). The
probe is created while the device is still held, so the scheduler has already found it
unschedulable (PodScheduled=False) before the release: the device becoming allocatable is
then a transition the test observes, not an assumption. After the release the probe must
get the device, run, and see it through the profile's verification - a driver that keeps a
released device busy fails there.

The probe must get the released device itself: that the driver prepares it again is what is
proved. So the test's device lease guards the probe's devices (`dra_devices(kind,
guard=True)`, or a node leased whole): no other test of the run (or of another run against the
cluster) is granted a lease whose pods could be allocated one of them. `start` checks that it
does; a claim of somebody else holding one of them after the release is the harness's error
(something allocates the driver's devices outside the lease book), never a pass.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.kube.state import AllocationResult
from conformance.model.devices import PublishedDevice
from conformance.model.outcome import HarnessError
from conformance.observe.steps import step
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


def unguarded(wanted: Collection[str], lease: Any) -> list[str]:
    """The devices of `wanted` that the test's device lease (a `DeviceLease`, or None) does
    not keep from other tests."""
    guarded = getattr(lease, "guarded", frozenset())
    return sorted(set(wanted) - set(guarded))


def _lease_of(workload: Workloads) -> Any:
    request = workload.request
    return None if request is None else request.getfixturevalue("device_lease")


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
        exposed = unguarded([device.id, *alikes], _lease_of(workload))
        if exposed:
            raise HarnessError(
                f"the probe for device {device.id} asks for {sorted([device.id, *alikes])}, "
                f"and the test's device lease does not keep {exposed} from other tests: "
                f"declare @pytest.mark.dra_devices({kind!r}, guard=True) (or lease the node "
                "whole with dra_node_exclusive)"
            )
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

    @classmethod
    def start_each(
        cls,
        workload: Workloads,
        device_ids: Iterable[str],
        *,
        kind: str = "default",
        name: str = "probe",
    ) -> list[ReuseProbe]:
        """Probes that together cover `device_ids`: one per group of look-alikes, since a
        probe asks for the whole group (a second probe of it could never be allocated beside
        the first). Named `<name>-0`, `<name>-1`, ..."""
        probes: list[ReuseProbe] = []
        for device_id in device_ids:
            if not any(device_id in p.wanted for p in probes):
                probes.append(
                    cls.start(workload, device_id, kind=kind, name=f"{name}-{len(probes)}")
                )
        return probes

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
        """Wait until the probe claim holds the device, then that its pod runs and sees exactly
        what the probe was allocated. A claim that is neither the probe nor one of
        `released_uids` holding a device the probe asks for is HarnessError (the lease guards
        them). A refused prepare of the probe is the failure, unless
        `refused_prepares_expected` (the driver may refuse while the device is still prepared
        for the released claim; the kubelet then retries)."""
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
            claims = all_claims(workload.k8s)
            others = {
                h: None
                for device_id in sorted(self.wanted)
                for h in holders(claims, driver, device_id)
                if h[2] not in ours
            }
            return {"probe": probe, "others": list(others)}

        seen = waits.wait_until(
            read,
            lambda v: state.is_allocated(v["probe"]) or bool(v["others"]),
            describe=f"device {self.device.id} to be allocated again (probe claim "
            f"{workload.namespace}/{self.name} pinned to it)",
            timeout=workload.timeout("claimAllocated") + workload.timeout("podDeleted"),
            show=lambda v: {"probe": state.claim_summary(v["probe"]), "others": v["others"]},
        )
        if not state.is_allocated(seen["probe"]):
            held_by = ", ".join(f"{ns}/{name}" for ns, name, _ in seen["others"])
            raise HarnessError(
                f"cannot prove that {driver} prepares device {self.device.id} again: claim(s) "
                f"{held_by}, neither the probe nor a claim the test released, were allocated "
                f"of {sorted(self.wanted)}, which the test's device lease guards; something "
                "outside the lease book allocates the driver's devices (another run with its "
                "own --dra-lease-book-name, or a workload of the cluster's own): run on a cluster "
                "nobody else uses meanwhile"
            )
        results = tuple(state.allocation_results(seen["probe"]))
        got = {r.device_id for r in results}
        assert got == set(self.wanted) and all(r.driver == driver for r in results), (
            f"probe claim {self.name} should get exactly {sorted(self.wanted)} from {driver}, "
            f"got {[(r.driver, r.device_id) for r in results]}"
        )
        workload.wait_running(self.name, abort_on_prepare_failure=not refused_prepares_expected)
        workload.assert_sees_exactly(self.name, results)
        return Reallocation(results)
