"""The profile's `consumableCapacity` (docs/profile.md): where DRA-ALLOC-017 finds devices
several claims share (DRAConsumableCapacity).

The shareable devices themselves are found in the driver's ResourceSlices (those with
`allowMultipleAllocations: true`); the profile only names the DeviceClass that selects them and
the capacity the test divides among claims (default: the profile's `capacity`).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from conformance.model.cel import resolve_name
from conformance.model.profile_types import CLASS_FORM, DeviceClassName, qualified_name
from conformance.model.typed import Strict

SECTION = "consumableCapacity"
_CAPACITY_FORM = "a capacity name <domain>/<identifier> or <identifier>, e.g. gpu.example.com/mem"
CapacityName = qualified_name(_CAPACITY_FORM)


@dataclass(frozen=True)
class ConsumableCapacity:
    device_class: str
    capacity: str | None  # fully qualified; None: the profile's top-level `capacity`


class ConsumableSection(Strict):
    """`consumableCapacity`: the class of shareable devices and the capacity to divide."""

    class_: DeviceClassName = Field(alias="class", description=CLASS_FORM)
    capacity: CapacityName | None = Field(
        None, description="the capacity the test divides (default: the profile's capacity)"
    )

    def domain(self, driver: str) -> ConsumableCapacity:
        capacity = resolve_name(self.capacity, driver) if self.capacity else None
        return ConsumableCapacity(self.class_, capacity)
