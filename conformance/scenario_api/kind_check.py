"""Whether an allocated device is of a profile device kind (pure: unit tested without a cluster).

The kind's selector is evaluated on the device's published attributes and capacity exactly as
the scheduler evaluates it (conformance.cel): an evaluation error, such as a missing
attribute, means the scheduler could not have picked the device for that selector.
"""

from __future__ import annotations

from conformance.model.devices import PublishedDevice
from conformance.scenario_api.device_requests import selector_match


def kind_problem(
    kind: str, expression: str | None, device: PublishedDevice, driver: str
) -> str | None:
    """Why `device` is not of `kind` (its selector `expression`), or None when it is."""
    verdict = selector_match(expression, device, driver)
    if verdict.matches:
        return None
    why = f": {verdict.error}" if verdict.error else " is false for it"
    return (
        f"allocated device {device.id} is not of kind {kind!r}: its selector {expression!r}"
        f"{why} (published attributes {dict(device.attributes)}, capacity "
        f"{dict(device.capacity)})"
    )


def is_of_kind(kind: str, expression: str | None, device: PublishedDevice, driver: str) -> bool:
    """True/False whether `device` is of `kind` (its selector `expression`)."""
    return kind_problem(kind, expression, device, driver) is None
