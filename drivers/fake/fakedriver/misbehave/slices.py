"""ResourceSlice misbehaviours: a pool published with wrong, missing or invalid attributes,
capacity, counters, taints or devices, or with a wrong slice count. Each hook takes what the
honest rendering made and returns (or edits) it as the misbehaviours in force break it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # not at run time: the honest modules import this package
    from fakedriver.catalog import DeviceSpec
    from fakedriver.controls import NodeControls

NAMES = frozenset(
    {
        "duplicate-device-names",  # the same device name twice in the pool
        "invalid-slice",  # a device twice in one slice: the API server rejects the slice
        "wrong-attribute",  # slices publish a model the device does not have
        "missing-attribute",  # slices omit the model attribute
        "unqualified-attribute",  # attribute names without the driver domain (legal)
        "multi-slash-attribute",  # an extra attribute <driver>/topology/numa (invalid)
        "inconsistent-pool",  # resourceSliceCount does not match the slices
        "keep-withdrawn-device",  # a withdraw is acknowledged but not published
        "taint-prepared-devices",  # devices of prepared claims get a NoExecute taint
        "missing-capacity",  # slices omit the memory capacity
        "phantom-device",  # slices publish one extra device the node does not have
        "partitions-without-counters",  # partitions consume no shared counter, the whole does
        "unpublished-taints",  # taints set through the control channel never reach the slice
        "none-taint-as-noschedule",  # a taint of effect None is published as NoSchedule
    }
)

# taint-prepared-devices: what devices handed out to claims are published with.
IN_USE_TAINT = {"key": "fake.dra-conformance.io/in-use", "effect": "NoExecute"}
MULTI_SLASH_ATTRIBUTE = "topology/numa"
PHANTOM_SUFFIX = "-ghost"

T = TypeVar("T")


def qualified(driver: str, name: str, controls: NodeControls) -> str:
    """unqualified-attribute (legal): the API takes a bare name to be in the driver's domain."""
    return name if "unqualified-attribute" in controls.misbehaviours else f"{driver}/{name}"


def attributes(
    attrs: dict[str, Any], driver: str, device: DeviceSpec, controls: NodeControls
) -> dict[str, Any]:
    model = qualified(driver, "model", controls)
    if "wrong-attribute" in controls.misbehaviours:
        attrs[model] = {"string": f"{device.model}-wrong"}
    if "missing-attribute" in controls.misbehaviours:
        del attrs[model]
    if "multi-slash-attribute" in controls.misbehaviours:
        # The API server lets a name with two slashes through (a gap in its validation), but
        # it is no QualifiedName: CEL and matchAttribute cannot name it.
        attrs[f"{driver}/{MULTI_SLASH_ATTRIBUTE}"] = {"string": "invalid"}
    return attrs


def device(body: dict[str, Any], device: DeviceSpec, controls: NodeControls) -> dict[str, Any]:
    if "missing-capacity" in controls.misbehaviours:
        del body["capacity"]
    if "partitions-without-counters" in controls.misbehaviours and device.whole is False:
        body.pop("consumesCounters", None)
    return body


def taints(taints: Sequence[T], own: T, controls: NodeControls) -> list[T]:
    """The device's taints that get published: unpublished-taints drops all but the driver's
    `own`."""
    if "unpublished-taints" in controls.misbehaviours:
        return [t for t in taints if t == own]
    return list(taints)


def taint(rendered: dict[str, Any], controls: NodeControls) -> dict[str, Any]:
    """none-taint-as-noschedule: a driver written before effect None existed falls back to
    its default effect, so an informational taint blocks allocation."""
    if "none-taint-as-noschedule" in controls.misbehaviours and rendered["effect"] == "None":
        rendered["effect"] = "NoSchedule"
    return rendered


def keeps_withdrawn(controls: NodeControls) -> bool:
    return "keep-withdrawn-device" in controls.misbehaviours


def pool_devices(
    rendered: list[dict[str, Any]], prepared: frozenset[str], controls: NodeControls
) -> list[dict[str, Any]]:
    """`prepared`: names of the devices of prepared claims."""
    if "phantom-device" in controls.misbehaviours and rendered:
        rendered.append(phantom_of(rendered[0]))
    if "taint-prepared-devices" in controls.misbehaviours:
        for body in rendered:
            if body["name"] in prepared:
                body["taints"] = [*body.get("taints", []), dict(IN_USE_TAINT)]
    return rendered


def chunks(
    chunks: list[list[dict[str, Any]]], rendered: list[dict[str, Any]], controls: NodeControls
) -> list[list[dict[str, Any]]]:
    if "invalid-slice" in controls.misbehaviours and rendered:
        # A duplicate name inside one slice: the API server refuses the write, so the pool
        # is never (re)published (a driver that never becomes ready).
        chunks[0] = [*chunks[0], dict(rendered[0])]
    return chunks


def extra_slices(
    rendered: list[dict[str, Any]], name: str, controls: NodeControls
) -> list[tuple[str, dict[str, Any]]]:
    """Slices added to the pool, `name` the name of the first."""
    if "duplicate-device-names" in controls.misbehaviours and rendered:
        # Duplicates inside one slice are rejected by the API server, so the
        # duplicate goes into a second slice of the same pool.
        return [(name, {"devices": [rendered[0]]})]
    return []


def slice_count(count: int, controls: NodeControls) -> int:
    return count + (1 if "inconsistent-pool" in controls.misbehaviours else 0)


def republish_on_prepare(controls: NodeControls) -> bool:
    """taint-prepared-devices: the slices show which devices are prepared."""
    return "taint-prepared-devices" in controls.misbehaviours


def phantom_of(device: dict[str, Any]) -> dict[str, Any]:
    """phantom-device: a copy of a real device under another name (and uuid), which the
    driver cannot prepare: the pool claims more devices than the node has."""
    ghost = json.loads(json.dumps(device))
    ghost["name"] = device["name"] + PHANTOM_SUFFIX
    for name, value in ghost.get("attributes", {}).items():
        if name.rsplit("/", 1)[-1] == "uuid":
            value["string"] = value["string"] + PHANTOM_SUFFIX
    return ghost
