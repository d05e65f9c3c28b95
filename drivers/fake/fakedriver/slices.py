"""Render a node's pool as resource.k8s.io/v1 ResourceSlice specs (pure functions).

One pool per node, named after the node. Devices go into ``devices`` slices,
shared counters into their own slice: the v1 API allows a slice to carry
either ``devices`` or ``sharedCounters``, never both. The publisher adds the
pool generation; everything else is decided here, including the deliberate
breakage of the misbehaviours.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from fakedriver.catalog import DeviceSpec, NodeInventory
from fakedriver.controls import UNHEALTHY_TAINT, NodeControls, Taint

PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
# Misbehaviour taint-prepared-devices: what devices handed out to claims are published with.
IN_USE_TAINT = {"key": "fake.dra-conformance.io/in-use", "effect": "NoExecute"}
# Device taints and counters lower the per-slice device limit from 128 to 64.
MAX_DEVICES_PER_SLICE = 64


@dataclass(frozen=True)
class SliceSpec:
    name: str
    spec: dict[str, Any]  # without pool.generation


@dataclass(frozen=True)
class PoolPlan:
    pool: str
    slices: tuple[SliceSpec, ...]
    published_devices: tuple[str, ...]

    def content_hash(self) -> str:
        payload = json.dumps([[s.name, s.spec] for s in self.slices], sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:32]


def slice_name(node_name: str, driver: str, kind: str, index: int) -> str:
    return f"{node_name}-{driver.replace('.', '-')}-{kind}-{index}"


MULTI_SLASH_ATTRIBUTE = "topology/numa"


def _qualified(driver: str, name: str, controls: NodeControls) -> str:
    if "unqualified-attribute" in controls.misbehaviours:
        return name  # legal: the API takes it to be in the driver's domain
    return f"{driver}/{name}"


def device_attributes(driver: str, device: DeviceSpec, controls: NodeControls) -> dict[str, Any]:
    def qualified(name: str) -> str:
        return _qualified(driver, name, controls)

    model = device.model
    if "wrong-attribute" in controls.misbehaviours:
        model = f"{device.model}-wrong"
    attrs: dict[str, Any] = {
        qualified("type"): {"string": device.type},
        qualified("model"): {"string": model},
        qualified("uuid"): {"string": device.uuid},
        qualified("firmware"): {"version": device.firmware},
    }
    if "missing-attribute" in controls.misbehaviours:
        del attrs[qualified("model")]
    if device.numa_node is not None:
        attrs[qualified("numaNode")] = {"int": device.numa_node}
    if device.interconnect:
        attrs[qualified("interconnect")] = {"string": device.interconnect}
    if device.parent:
        attrs[qualified("parent")] = {"string": device.parent}
    if device.whole is not None:  # lets a selector tell the whole device from its partitions
        attrs[qualified("whole")] = {"bool": device.whole}
    if device.pcie_root:
        attrs[PCIE_ROOT] = {"string": device.pcie_root}
    if "multi-slash-attribute" in controls.misbehaviours:
        # The API server lets a name with two slashes through (a gap in its validation), but
        # it is no QualifiedName: CEL and matchAttribute cannot name it.
        attrs[f"{driver}/{MULTI_SLASH_ATTRIBUTE}"] = {"string": "invalid"}
    return attrs


PHANTOM_SUFFIX = "-ghost"


def phantom_of(device: dict[str, Any]) -> dict[str, Any]:
    """Misbehaviour phantom-device: a copy of a real device under another name (and uuid),
    which the driver cannot prepare: the pool claims more devices than the node has."""
    ghost = json.loads(json.dumps(device))
    ghost["name"] = device["name"] + PHANTOM_SUFFIX
    for name, value in ghost.get("attributes", {}).items():
        if name.rsplit("/", 1)[-1] == "uuid":
            value["string"] = value["string"] + PHANTOM_SUFFIX
    return ghost


def render_device(
    driver: str,
    device: DeviceSpec,
    controls: NodeControls,
    taint_time: Callable[[str, Taint], str | None],
) -> dict[str, Any]:
    memory: dict[str, Any] = {"value": device.memory}
    if device.request_policy is not None:
        memory["requestPolicy"] = dict(device.request_policy)
    out: dict[str, Any] = {
        "name": device.name,
        "attributes": device_attributes(driver, device, controls),
        "capacity": {_qualified(driver, "memory", controls): memory},
    }
    if device.allow_multiple_allocations:
        out["allowMultipleAllocations"] = True
    if device.binding_conditions:
        out["bindingConditions"] = list(device.binding_conditions)
        if device.binding_failure_conditions:
            out["bindingFailureConditions"] = list(device.binding_failure_conditions)
        if device.binds_to_node:
            out["bindsToNode"] = True
    if "missing-capacity" in controls.misbehaviours:
        del out["capacity"]
    no_counters = "partitions-without-counters" in controls.misbehaviours and device.whole is False
    if device.consumes and not no_counters:
        out["consumesCounters"] = [
            {
                "counterSet": c.counter_set,
                "counters": {k: {"value": v} for k, v in c.counters.items()},
            }
            for c in device.consumes
        ]
    taints = []
    hidden = "unpublished-taints" in controls.misbehaviours
    # Misbehaviour none-taint-as-noschedule: a driver written before effect None existed
    # falls back to its default effect, so an informational taint blocks allocation.
    none_blocks = "none-taint-as-noschedule" in controls.misbehaviours
    for taint in controls.device(device.name).taints:
        if hidden and taint != UNHEALTHY_TAINT:
            continue
        rendered: dict[str, Any] = taint.to_dict()
        if none_blocks and rendered["effect"] == "None":
            rendered["effect"] = "NoSchedule"
        if not rendered["value"]:
            del rendered["value"]
        added = taint_time(device.name, taint)
        if added:
            rendered["timeAdded"] = added
        taints.append(rendered)
    if taints:
        out["taints"] = taints
    return out


def render_pool(
    driver: str,
    node_name: str,
    inventory: NodeInventory,
    controls: NodeControls,
    taint_time: Callable[[str, Taint], str | None] = lambda _d, _t: None,
    partitionable: bool = True,
    prepared: frozenset[str] = frozenset(),
) -> PoolPlan:
    """`prepared`: names of the devices of prepared claims (for taint-prepared-devices)."""
    keep_withdrawn = "keep-withdrawn-device" in controls.misbehaviours
    devices = [
        d
        for d in inventory.devices
        if (partitionable or not d.consumes)
        and (keep_withdrawn or not controls.device(d.name).withdrawn)
    ]
    rendered = [render_device(driver, d, controls, taint_time) for d in devices]
    if "phantom-device" in controls.misbehaviours and rendered:
        rendered.append(phantom_of(rendered[0]))
    if "taint-prepared-devices" in controls.misbehaviours:
        for body in rendered:
            if body["name"] in prepared:
                body["taints"] = [*body.get("taints", []), dict(IN_USE_TAINT)]
    chunks = [
        rendered[i : i + MAX_DEVICES_PER_SLICE]
        for i in range(0, len(rendered), MAX_DEVICES_PER_SLICE)
    ] or [[]]  # an empty pool is still published, so consumers see "no devices"
    if "invalid-slice" in controls.misbehaviours and rendered:
        # A duplicate name inside one slice: the API server refuses the write, so the pool
        # is never (re)published (a driver that never becomes ready).
        chunks[0] = [*chunks[0], dict(rendered[0])]

    bodies: list[tuple[str, dict[str, Any]]] = [
        (slice_name(node_name, driver, "devices", i), {"devices": chunk})
        for i, chunk in enumerate(chunks)
    ]
    used_sets = {c.counter_set for d in devices for c in d.consumes}
    counter_sets = [c for c in inventory.counter_sets if c.name in used_sets]
    if partitionable and counter_sets:
        bodies.append(
            (
                slice_name(node_name, driver, "counters", 0),
                {
                    "sharedCounters": [
                        {
                            "name": c.name,
                            "counters": {k: {"value": v} for k, v in c.counters.items()},
                        }
                        for c in counter_sets
                    ]
                },
            )
        )
    if "duplicate-device-names" in controls.misbehaviours and rendered:
        # Duplicates inside one slice are rejected by the API server, so the
        # duplicate goes into a second slice of the same pool.
        bodies.append((slice_name(node_name, driver, "duplicate", 0), {"devices": [rendered[0]]}))

    count = len(bodies) + (1 if "inconsistent-pool" in controls.misbehaviours else 0)
    slices = tuple(
        SliceSpec(
            name=name,
            spec={
                "driver": driver,
                "nodeName": node_name,
                "pool": {"name": node_name, "resourceSliceCount": count},
                **body,
            },
        )
        for name, body in bodies
    )
    return PoolPlan(pool=node_name, slices=slices, published_devices=tuple(d.name for d in devices))


def instance_named(plan: PoolPlan, instance: str) -> PoolPlan:
    """Misbehaviour stale-slice-after-restart: slice names that carry the plugin instance, as a
    driver naming its slices after its pod would (the predecessor's names are not its own)."""
    return replace(plan, slices=tuple(replace(s, name=f"{s.name}-{instance}") for s in plan.slices))
