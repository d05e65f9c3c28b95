"""Shareable devices (DRAConsumableCapacity) as their ResourceSlices publish them, and how many
claims of a given capacity request fit on one: pure functions over the API's dicts, so
DRA-ALLOC-017 sizes its claims from what the driver publishes and they are tested without a
cluster.

The rules follow k8s.io/api@v0.37.2 resource/v1 (DeviceCapacity.requestPolicy,
CapacityRequirements.requests): a request is rounded up to the policy's next valid value
(validValues: the smallest one >= the request; validRange: at least min, then min + n*step,
never above max); a capacity a request does not name consumes the policy's default, or the
whole capacity when the device has no policy for it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

from conformance.model.cel import resolve_name
from conformance.model.devices import latest_slices


@dataclass(frozen=True)
class SharedCapacity:
    value: Decimal
    policy: Mapping[str, Any] | None = None  # requestPolicy as published (camelCase)

    def consumed(self, requested: Decimal | None) -> Decimal | None:
        """What a request of `requested` (None: the request does not name this capacity)
        consumes; None when the policy rejects it."""
        policy = self.policy
        if requested is None:
            if policy is None or policy.get("default") is None:
                return self.value
            return parse_quantity(policy["default"])
        if policy is None:
            return requested
        if policy.get("validValues"):
            fitting = [v for v in map(parse_quantity, policy["validValues"]) if v >= requested]
            return min(fitting) if fitting else None
        bounds = policy.get("validRange")
        if not bounds:
            return requested
        low = parse_quantity(bounds["min"]) if bounds.get("min") is not None else Decimal(0)
        amount = max(requested, low)
        if bounds.get("step") is not None:
            step = parse_quantity(bounds["step"])
            amount = low + math.ceil((amount - low) / step) * step
        if bounds.get("max") is not None and amount > parse_quantity(bounds["max"]):
            return None
        return amount


@dataclass(frozen=True)
class SharedDevice:
    pool: str
    name: str
    node: str | None
    capacity: Mapping[str, SharedCapacity] = field(default_factory=dict)  # qualified names

    @property
    def id(self) -> str:
        return f"{self.pool}/{self.name}"

    def consumption(self, requests: Mapping[str, Decimal]) -> dict[str, Decimal] | None:
        """What one claim with these capacity requests consumes of every capacity; None when
        a policy rejects a request or a request names a capacity the device lacks."""
        if set(requests) - set(self.capacity):
            return None
        out: dict[str, Decimal] = {}
        for name, cap in self.capacity.items():
            amount = cap.consumed(requests.get(name))
            if amount is None:
                return None
            out[name] = amount
        return out

    def fits(self, requests: Mapping[str, Decimal]) -> int:
        """How many such claims the device holds at once."""
        use = self.consumption(requests)
        if use is None:
            return 0
        counts = [int(self.capacity[n].value // a) for n, a in use.items() if a > 0]
        return min(counts) if counts else 0


def shared_devices(slices: Iterable[Mapping[str, Any]], driver: str) -> list[SharedDevice]:
    """The driver's devices with allowMultipleAllocations: true, from its newest slices."""
    out: list[SharedDevice] = []
    for s in latest_slices(x for x in slices if x.get("spec", {}).get("driver") == driver):
        spec = s["spec"]
        for device in spec.get("devices") or ():
            if not device.get("allowMultipleAllocations"):
                continue
            capacity = {
                resolve_name(name, driver): SharedCapacity(
                    parse_quantity(str(cap.get("value"))), cap.get("requestPolicy")
                )
                for name, cap in (device.get("capacity") or {}).items()
            }
            out.append(
                SharedDevice(
                    pool=spec["pool"]["name"],
                    name=device["name"],
                    node=device.get("nodeName") or spec.get("nodeName"),
                    capacity=capacity,
                )
            )
    return sorted(out, key=lambda d: d.id)
