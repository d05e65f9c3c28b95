"""Render a node's pool as resource.k8s.io/v1 ResourceSlice specs (pure functions).

One pool per node, named after the node. Devices go into ``devices`` slices,
shared counters into their own slice: the v1 API allows a slice to carry
either ``devices`` or ``sharedCounters``, never both. The publisher adds the
pool generation; everything else is decided here. The misbehaviours break the
rendering through the hooks of fakedriver.misbehave.slices.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fakedriver.catalog import DeviceSpec, NodeInventory
from fakedriver.controls import UNHEALTHY_TAINT, NodeControls, Taint
from fakedriver.misbehave import slices as hooks

PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
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


def device_attributes(driver: str, device: DeviceSpec, controls: NodeControls) -> dict[str, Any]:
    def qualified(name: str) -> str:
        return hooks.qualified(driver, name, controls)

    attrs: dict[str, Any] = {
        qualified("type"): {"string": device.type},
        qualified("model"): {"string": device.model},
        qualified("uuid"): {"string": device.uuid},
        qualified("firmware"): {"version": device.firmware},
    }
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
    return hooks.attributes(attrs, driver, device, controls)


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
        "capacity": {hooks.qualified(driver, "memory", controls): memory},
    }
    if device.allow_multiple_allocations:
        out["allowMultipleAllocations"] = True
    if device.binding_conditions:
        out["bindingConditions"] = list(device.binding_conditions)
        if device.binding_failure_conditions:
            out["bindingFailureConditions"] = list(device.binding_failure_conditions)
        if device.binds_to_node:
            out["bindsToNode"] = True
    if device.consumes:
        out["consumesCounters"] = [
            {
                "counterSet": c.counter_set,
                "counters": {k: {"value": v} for k, v in c.counters.items()},
            }
            for c in device.consumes
        ]
    taints = []
    for taint in hooks.taints(controls.device(device.name).taints, UNHEALTHY_TAINT, controls):
        rendered = hooks.taint(taint.to_dict(), controls)
        if not rendered["value"]:
            del rendered["value"]
        added = taint_time(device.name, taint)
        if added:
            rendered["timeAdded"] = added
        taints.append(rendered)
    if taints:
        out["taints"] = taints
    return hooks.device(out, device, controls)


def render_pool(
    driver: str,
    node_name: str,
    inventory: NodeInventory,
    controls: NodeControls,
    taint_time: Callable[[str, Taint], str | None] = lambda _d, _t: None,
    partitionable: bool = True,
    prepared: frozenset[str] = frozenset(),
) -> PoolPlan:
    """`prepared`: names of the devices of prepared claims (a misbehaviour shows them)."""
    keep_withdrawn = hooks.keeps_withdrawn(controls)
    devices = [
        d
        for d in inventory.devices
        if (partitionable or not d.consumes)
        and (keep_withdrawn or not controls.device(d.name).withdrawn)
    ]
    rendered = [render_device(driver, d, controls, taint_time) for d in devices]
    rendered = hooks.pool_devices(rendered, prepared, controls)
    chunks = [
        rendered[i : i + MAX_DEVICES_PER_SLICE]
        for i in range(0, len(rendered), MAX_DEVICES_PER_SLICE)
    ] or [[]]  # an empty pool is still published, so consumers see "no devices"
    chunks = hooks.chunks(chunks, rendered, controls)

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
    duplicate = slice_name(node_name, driver, "duplicate", 0)
    bodies.extend(hooks.extra_slices(rendered, duplicate, controls))

    count = hooks.slice_count(len(bodies), controls)
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
