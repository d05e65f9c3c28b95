"""The pieces of a ResourceClaim spec: device requests, prioritized-list subrequests,
constraints, opaque config and tolerations. Plain functions over camelCase dicts, no metadata
(conformance.kube.builders adds that to whole objects)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _exact(
    device_class: str,
    *,
    selectors: Sequence[str] = (),
    count: int | None = None,
    all_devices: bool = False,
    admin_access: bool | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    if all_devices and count is not None:
        raise ValueError("count and all_devices are mutually exclusive")
    body: dict[str, Any] = {"deviceClassName": device_class}
    if selectors:
        body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if all_devices:
        body["allocationMode"] = "All"
    elif count is not None:
        body["allocationMode"] = "ExactCount"
        body["count"] = count
    if admin_access is not None:
        body["adminAccess"] = admin_access
    if tolerations:
        body["tolerations"] = [dict(t) for t in tolerations]
    if capacity:
        body["capacity"] = {"requests": dict(capacity)}
    return body


def request(
    name: str,
    device_class: str,
    *,
    selectors: Sequence[str] = (),
    count: int | None = None,
    all_devices: bool = False,
    admin_access: bool | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A DeviceRequest with `exactly` (the only form besides firstAvailable)."""
    return {
        "name": name,
        "exactly": _exact(
            device_class,
            selectors=selectors,
            count=count,
            all_devices=all_devices,
            admin_access=admin_access,
            tolerations=tolerations,
            capacity=capacity,
        ),
    }


def subrequest(
    name: str,
    device_class: str,
    *,
    selectors: Sequence[str] = (),
    count: int | None = None,
    all_devices: bool = False,
    tolerations: Sequence[Mapping[str, Any]] = (),
    capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A firstAvailable entry; results name it `<request>/<subrequest>`."""
    return {
        "name": name,
        **_exact(
            device_class,
            selectors=selectors,
            count=count,
            all_devices=all_devices,
            tolerations=tolerations,
            capacity=capacity,
        ),
    }


def first_available(name: str, subrequests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    if not subrequests:
        raise ValueError("firstAvailable needs at least one subrequest")
    return {"name": name, "firstAvailable": [dict(s) for s in subrequests]}


def match_attribute(attribute: str, requests: Sequence[str] = ()) -> dict[str, Any]:
    body: dict[str, Any] = {"matchAttribute": attribute}
    if requests:
        body["requests"] = list(requests)
    return body


def opaque_config(
    driver: str, parameters: Mapping[str, Any], requests: Sequence[str] = ()
) -> dict[str, Any]:
    """Claim config (`requests` limits it to some requests) or, without requests, class config."""
    body: dict[str, Any] = {"opaque": {"driver": driver, "parameters": dict(parameters)}}
    if requests:
        body["requests"] = list(requests)
    return body


def toleration(
    key: str | None = None,
    *,
    operator: str = "Equal",
    value: str | None = None,
    effect: str | None = None,
    toleration_seconds: int | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"operator": operator}
    for field, v in (
        ("key", key),
        ("value", value),
        ("effect", effect),
        ("tolerationSeconds", toleration_seconds),
    ):
        if v is not None:
            body[field] = v
    return body
