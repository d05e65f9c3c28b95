"""Binding conditions (KEP-5007) as a claim shows them: what its allocation asks for, what the
driver reported in status.devices, and whether the pod was bound too early. Pure functions over
API dicts (camelCase wire form), unit tested without a cluster.

The scheduler matches a status.devices entry to a result by driver, pool and device (shareID is
not looked at) and a condition by its exact type, so these helpers do the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# kube-scheduler re-reads a waiting claim every 5 s (PreBind's poll, v1.36 and v1.37): every
# "binds after the driver reported" expectation allows this much on top of the profile's timeouts.
SCHEDULER_POLL_S = 5.0


@dataclass(frozen=True)
class WaitingDevice:
    """One allocation result with binding conditions."""

    driver: str
    pool: str
    device: str
    conditions: tuple[str, ...]
    failure_conditions: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.pool}/{self.device}"


def allocated_at(claim: Mapping[str, Any] | None) -> str | None:
    """status.allocation.allocationTimestamp; None when not allocated."""
    allocation = ((claim or {}).get("status") or {}).get("allocation")
    if not allocation:
        return None
    return str(allocation.get("allocationTimestamp") or "")


def waiting_devices(claim: Mapping[str, Any] | None, driver: str) -> list[WaitingDevice]:
    """The claim's results of `driver` that carry bindingConditions."""
    allocation = ((claim or {}).get("status") or {}).get("allocation") or {}
    return [
        WaitingDevice(
            driver=r["driver"],
            pool=r["pool"],
            device=r["device"],
            conditions=tuple(r.get("bindingConditions") or ()),
            failure_conditions=tuple(r.get("bindingFailureConditions") or ()),
        )
        for r in (allocation.get("devices") or {}).get("results") or ()
        if r.get("driver") == driver and r.get("bindingConditions")
    ]


def entry_of(claim: Mapping[str, Any] | None, device: WaitingDevice) -> dict[str, Any] | None:
    """The status.devices entry the scheduler reads for `device`."""
    for entry in ((claim or {}).get("status") or {}).get("devices") or ():
        if (entry.get("driver"), entry.get("pool"), entry.get("device")) == (
            device.driver,
            device.pool,
            device.device,
        ):
            return entry
    return None


def condition_of(entry: Mapping[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for condition in (entry or {}).get("conditions") or ():
        if condition.get("type") == kind:
            return condition
    return None


def _true(entry: Mapping[str, Any] | None, kind: str) -> bool:
    return (condition_of(entry, kind) or {}).get("status") == "True"


def missing_conditions(claim: Mapping[str, Any] | None, device: WaitingDevice) -> list[str]:
    """The device's binding conditions not (yet) True in its entry."""
    entry = entry_of(claim, device)
    return [c for c in device.conditions if not _true(entry, c)]


def failed_conditions(claim: Mapping[str, Any] | None, device: WaitingDevice) -> list[str]:
    """The device's binding failure conditions True in its entry."""
    entry = entry_of(claim, device)
    return [c for c in device.failure_conditions if _true(entry, c)]


def ready_for_binding(claim: Mapping[str, Any] | None, driver: str) -> bool:
    """As the scheduler decides: allocated, and every waiting device has all its binding
    conditions True and none of its failure conditions."""
    devices = waiting_devices(claim, driver)
    return allocated_at(claim) is not None and all(
        not missing_conditions(claim, d) and not failed_conditions(claim, d) for d in devices
    )


def bound(pod: Mapping[str, Any] | None) -> bool:
    return bool(((pod or {}).get("spec") or {}).get("nodeName"))


@dataclass
class BindingTrail:
    """What successive reads of (pod, claim) showed. Each read takes the pod first and the
    claim after it, so a pod already bound while the later claim still waits (or has failed)
    was bound before the driver allowed it: the scheduler, not the driver, got that wrong, but
    the trail records it either way."""

    driver: str
    allocations: list[str] = field(default_factory=list)  # allocationTimestamps, in order
    saw_deallocated: bool = False
    bound_early: list[str] = field(default_factory=list)

    def record(self, pod: Mapping[str, Any] | None, claim: Mapping[str, Any] | None) -> None:
        at = allocated_at(claim)
        if at is None:
            if self.allocations:
                self.saw_deallocated = True
            return
        if not self.allocations or self.allocations[-1] != at:
            self.allocations.append(at)
        devices = waiting_devices(claim, self.driver)
        if bound(pod) and devices and not ready_for_binding(claim, self.driver):
            self.bound_early.append(
                f"pod bound to {pod['spec']['nodeName']} while the claim (allocated at {at}) "
                f"still waited: {_waiting_text(claim, devices)}"
            )

    @property
    def reallocated(self) -> bool:
        """Allocated again after the first allocation: seen deallocated, or a new timestamp."""
        return self.saw_deallocated or len(self.allocations) > 1


def _waiting_text(claim: Mapping[str, Any] | None, devices: Sequence[WaitingDevice]) -> str:
    parts = []
    for d in devices:
        missing, failed = missing_conditions(claim, d), failed_conditions(claim, d)
        parts.append(f"{d.id} missing {missing or '[]'}, failed {failed or '[]'}")
    return "; ".join(parts)
