"""The profile's `partitionableDevices` (docs/profile.md): how DRA-ALLOC-016 asks for a whole
partitionable device and for one of its partitions.

A selector cannot name a device, so the profile says which DeviceClass (and optional CEL
expression) picks the whole devices and which picks their partitions; the test finds the
counters they share in the driver's ResourceSlices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.model.schema import DNS_SUBDOMAIN_RE, Problems, join

SECTION = "partitionableDevices"
CAPABILITY = "partitionable-devices"
WHOLE_KIND = "partitionable:whole"
PARTITION_KIND = "partitionable:partition"
# Device kinds a test may lease; always defined, empty when the profile has no section.
PARTITIONABLE_KINDS = (WHOLE_KIND, PARTITION_KIND)
_ROLES = {"whole": WHOLE_KIND, "partition": PARTITION_KIND}
_FORM = "{class: <DeviceClass name>, expression: <optional CEL>}"


@dataclass(frozen=True)
class DeviceChoice:
    device_class: str
    expression: str | None = None


@dataclass(frozen=True)
class PartitionableDevices:
    whole: DeviceChoice
    partition: DeviceChoice

    def for_kind(self, kind: str) -> DeviceChoice:
        return self.whole if kind == WHOLE_KIND else self.partition


def parse_partitionable(
    p: Problems, document: Mapping[str, Any], capabilities: Iterable[str]
) -> PartitionableDevices | None:
    """The section of a profile `document`; required when it lists partitionable-devices."""
    if SECTION not in document:
        if CAPABILITY in capabilities:
            p.add(SECTION, f"required when capabilities lists {CAPABILITY} (expected "
                  f"{{whole: {_FORM}, partition: {_FORM}}})")  # fmt: skip
        return None
    section = p.mapping(SECTION, document[SECTION], tuple(_ROLES))
    if section is None:
        return None
    choices: dict[str, DeviceChoice] = {}
    for role in _ROLES:
        path = join(SECTION, role)
        if role not in section:
            p.missing(path, _FORM)
            continue
        entry = p.mapping(path, section[role], ("class", "expression"))
        if entry is None:
            continue
        if "class" not in entry:
            p.missing(join(path, "class"), "a DeviceClass name (a DNS subdomain)")
            continue
        device_class = p.string(
            join(path, "class"), entry["class"], "a DeviceClass name", DNS_SUBDOMAIN_RE
        )
        expression = None
        if "expression" in entry:
            expression = p.string(join(path, "expression"), entry["expression"], "a CEL string")
            if expression is None:
                continue
        if device_class:
            choices[role] = DeviceChoice(device_class, expression)
    if set(choices) != set(_ROLES):
        return None
    return PartitionableDevices(choices["whole"], choices["partition"])
