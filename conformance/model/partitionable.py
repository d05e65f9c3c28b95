"""The profile's `partitionableDevices` (docs/profile.md): how DRA-ALLOC-016 asks for a whole
partitionable device and for one of its partitions.

A selector cannot name a device, so the profile says which DeviceClass (and optional CEL
expression) picks the whole devices and which picks their partitions; the test finds the
counters they share in the driver's ResourceSlices.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from conformance.model.profile_types import CLASS_FORM
from conformance.model.schema import DNS_SUBDOMAIN_RE
from conformance.model.typed import Strict, text

SECTION = "partitionableDevices"
CAPABILITY = "partitionable-devices"
WHOLE_KIND = "partitionable:whole"
PARTITION_KIND = "partitionable:partition"
# Device kinds a test may lease; always defined, empty when the profile has no section.
PARTITIONABLE_KINDS = (WHOLE_KIND, PARTITION_KIND)
_FORM = "{class: <DeviceClass name>, expression: <optional CEL>}"
CelText = text("a CEL string")
ClassName = text("a DeviceClass name", DNS_SUBDOMAIN_RE)


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


def missing_section() -> str:
    """The problem of a profile listing the capability without the section."""
    return (
        f"required when capabilities lists {CAPABILITY} (expected "
        f"{{whole: {_FORM}, partition: {_FORM}}})"
    )


class DeviceChoiceSection(Strict):
    class_: ClassName = Field(alias="class", description=CLASS_FORM)
    expression: CelText | None = Field(None, description="a CEL selector within the class")

    def domain(self) -> DeviceChoice:
        return DeviceChoice(self.class_, self.expression)


class PartitionableSection(Strict):
    """`partitionableDevices`: how to ask for a whole device and for one of its partitions."""

    whole: DeviceChoiceSection = Field(description=_FORM)
    partition: DeviceChoiceSection = Field(description=_FORM)

    def domain(self) -> PartitionableDevices:
        return PartitionableDevices(self.whole.domain(), self.partition.domain())
