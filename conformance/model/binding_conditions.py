"""The profile's `bindingConditions` (docs/profile.md): where DRA-ALLOC-018 finds devices whose
allocation waits for the driver before the pod binds (KEP-5007, DRADeviceBindingConditions).

The condition names come from the driver's ResourceSlices (`bindingConditions`,
`bindingFailureConditions` of each device); the profile only names the DeviceClass that selects
such devices, so that no other test allocates one and waits on the driver.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from conformance.model.profile_types import CLASS_FORM, DeviceClassName
from conformance.model.typed import Strict

SECTION = "bindingConditions"
CAPABILITY = "binding-conditions"


@dataclass(frozen=True)
class BindingConditions:
    device_class: str


class BindingConditionsSection(Strict):
    """`bindingConditions`: the class of devices published with bindingConditions."""

    class_: DeviceClassName = Field(alias="class", description=CLASS_FORM)

    def domain(self) -> BindingConditions:
        return BindingConditions(self.class_)


def missing_section() -> str:
    return (
        f"required when capabilities lists {CAPABILITY} (expected {{class: <DeviceClass of the "
        "devices published with bindingConditions>}})"
    )
