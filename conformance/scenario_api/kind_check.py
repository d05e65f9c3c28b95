"""Whether an allocated device is of a profile device kind, and which published attributes an
allocated device is checked by (pure: unit tested without a cluster).

The kind's selector is evaluated on the device's published attributes and capacity exactly as
the scheduler evaluates it (conformance.cel): an evaluation error, such as a missing
attribute, means the scheduler could not have picked the device for that selector.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

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


def allocated_against(
    live: Mapping[str, PublishedDevice],
    at_start: Iterable[PublishedDevice],
    allocated: Collection[str] | None = None,
) -> dict[str, PublishedDevice]:
    """Every device by id as published now, else as published at the run's start (only the
    `allocated` ids, when given: a device withdrawn and not allocated was not there to pick).

    A driver may withdraw an allocated device from its slices (a network interface moved into
    the pod's namespace): the allocation is recorded in the claim, not the slice, so the
    device's attributes are the ones the scheduler saw before the pod, i.e. the run start's.
    """
    earlier = {d.id: d for d in at_start if allocated is None or d.id in allocated}
    return {**earlier, **live}


def node_device_ids(
    live: Mapping[str, PublishedDevice], at_start: Iterable[PublishedDevice], node: str
) -> frozenset[str]:
    """The ids of `node`'s devices, published now or at the run's start: a device the driver
    withdrew while a pod holds it (a network interface in the pod's namespace) is still one of
    that node's, and the scheduler allocated it from the slices as they were."""
    return frozenset(i for i, d in allocated_against(live, at_start).items() if d.node == node)


def allocated_device(
    device_id: str, devices: Mapping[str, PublishedDevice], driver: str
) -> PublishedDevice:
    """The device `device_id` of `allocated_against`'s answer, or an assertion that says it
    was looked up and not found (and what its pool publishes)."""
    device = devices.get(device_id)
    if device is not None:
        return device
    pool = device_id.rpartition("/")[0]
    same_pool = sorted(i for i in devices if i.rpartition("/")[0] == pool)
    raise AssertionError(
        f"allocated device {device_id} of driver {driver} is in no ResourceSlice, neither now "
        f"nor at the run's start, so its attributes cannot be checked (pool {pool} publishes "
        f"{same_pool or 'nothing'}): the scheduler allocated a device the driver never "
        "showed the suite"
    )
