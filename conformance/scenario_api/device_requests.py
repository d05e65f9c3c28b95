"""Requests for a profile's device kinds and CEL that describes one published device (pure: unit
tested without a cluster).

CEL cannot name a device, only describe it: `describing_selector` is every attribute of it, and
`look_alikes` the other devices on its node that description also matches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from conformance.cel import MatchResult
from conformance.cel.selection import selector_results
from conformance.kube.claim_requests import request
from conformance.model.cel import attribute_ref, cel_string
from conformance.model.devices import PublishedDevice
from conformance.model.profile import Profile


def kind_request(
    profile: Profile,
    kind: str = "default",
    name: str = "dev",
    *,
    selectors: Sequence[str] = (),
    count: int | None = None,
    all_devices: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """A request for devices of a profile device kind (`default`, a selector name,
    `class:<key>`): the kind's DeviceClass plus its selector, plus any extra `selectors`."""
    device_class, expression = profile.kind_class_and_expression(kind)
    return request(
        name,
        device_class,
        selectors=[*([expression] if expression else []), *selectors],
        count=count,
        all_devices=all_devices,
        **kwargs,
    )


def _cel_literal(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return cel_string(value)


def describing_selector(device: PublishedDevice) -> str | None:
    """A CEL conjunction of every (non-version) attribute of `device`; None if it has none."""
    terms = [
        f"{attribute_ref(name)} == {_cel_literal(value)}"
        for name, value in sorted(device.matchable_attributes().items())
    ]
    return " && ".join(terms) or None


def look_alikes(device: PublishedDevice, devices: Iterable[PublishedDevice]) -> list[str]:
    """Ids of the other devices on the same node (and pool) that `describing_selector(device)`
    also selects: CEL cannot name a device, only describe it."""
    others = [d for d in devices if d.id != device.id and d.node == device.node]
    selector = describing_selector(device)
    if selector is None:
        return sorted(d.id for d in others)
    # The describing selector names attributes fully qualified and never device.driver, so
    # the driver (the domain of unqualified names) does not enter its verdict.
    (row,) = selector_results([selector], others, "")
    return sorted(d.id for d, verdict in zip(others, row, strict=True) if verdict.matches)


def selector_verdict(expression: str | None, device: PublishedDevice, driver: str) -> bool:
    """Whether a kind's selector selects a published device, as the scheduler decides (an
    evaluation error, such as a missing attribute, does not select it)."""
    return selector_match(expression, device, driver).matches


def selector_match(expression: str | None, device: PublishedDevice, driver: str) -> MatchResult:
    """`selector_verdict` with the evaluation error, if any (None expression: selects)."""
    if expression is None:
        return MatchResult(True)
    ((result,),) = selector_results([expression], [device], driver)
    return result
