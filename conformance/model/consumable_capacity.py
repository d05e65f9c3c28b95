"""The profile's `consumableCapacity` (docs/profile.md): where DRA-ALLOC-017 finds devices
several claims share (DRAConsumableCapacity).

The shareable devices themselves are found in the driver's ResourceSlices (those with
`allowMultipleAllocations: true`); the profile only names the DeviceClass that selects them and
the capacity the test divides among claims (default: the profile's `capacity`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.model.cel import attribute_name_problem, resolve_name
from conformance.model.schema import DNS_SUBDOMAIN_RE, Problems, join

SECTION = "consumableCapacity"
_CLASS_FORM = "a DeviceClass name (a DNS subdomain)"
_CAPACITY_FORM = "a capacity name <domain>/<identifier> or <identifier>, e.g. gpu.example.com/mem"


@dataclass(frozen=True)
class ConsumableCapacity:
    device_class: str
    capacity: str | None  # fully qualified; None: the profile's top-level `capacity`


def parse_consumable_capacity(
    p: Problems, value: Any, driver: str | None
) -> ConsumableCapacity | None:
    section = p.mapping(SECTION, value, ("class", "capacity"))
    if section is None:
        return None
    if "class" not in section:
        p.missing(join(SECTION, "class"), _CLASS_FORM)
        return None
    device_class = p.string(join(SECTION, "class"), section["class"], _CLASS_FORM, DNS_SUBDOMAIN_RE)
    capacity = section.get("capacity")
    if capacity is not None:
        if not isinstance(capacity, str) or attribute_name_problem(capacity):
            p.wrong(join(SECTION, "capacity"), _CAPACITY_FORM, capacity)
            return None
        capacity = resolve_name(capacity, driver) if driver else capacity
    return ConsumableCapacity(device_class, capacity) if device_class else None
