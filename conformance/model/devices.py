"""The devices a driver publishes (from ResourceSlices) and the selectors of a DeviceClass.
Pure functions over API dicts (camelCase wire form), so they are tested without a cluster and
shared by the run context, `profile check` and the lease. Which devices a selector selects is
decided by conformance.cel.selection, which runs the scheduler's CEL package.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from conformance.model.cel import Scalar, device_attributes, device_capacity, resolve_name
from conformance.model.frozen import FrozenMap


@dataclass(frozen=True)
class PublishedDevice:
    pool: str
    name: str
    node: str | None  # None: the slice uses nodeSelector/allNodes, not one node
    # Keyed by fully qualified name: unqualified slice names resolved in the driver's domain.
    attributes: Mapping[str, Scalar] = field(default_factory=FrozenMap)
    version_attributes: frozenset[str] = frozenset()  # names whose value is a version
    capacity: Mapping[str, str] = field(default_factory=FrozenMap)  # qualified name -> quantity
    taints: tuple[tuple[str, str, str], ...] = ()  # (key, value, effect)
    multiple_allocations: bool = False  # allowMultipleAllocations (DRAConsumableCapacity)
    # bindingConditions / bindingFailureConditions (DRADeviceBindingConditions)
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """`<pool>/<device>`: unique per driver, the form results[] and the fake CDI env use."""
        return f"{self.pool}/{self.name}"

    def matchable_attributes(self) -> dict[str, Scalar]:
        return {k: v for k, v in self.attributes.items() if k not in self.version_attributes}

    def slice_entry(self) -> dict:
        """The device as a ResourceSlice v1 `spec.devices[]` entry (qualified names), which is
        what the selector evaluator reads. List-typed attributes were not kept."""
        attributes: dict[str, dict] = {}
        for name, value in self.attributes.items():
            if name in self.version_attributes:
                attributes[name] = {"version": value}
            elif isinstance(value, bool):
                attributes[name] = {"bool": value}
            elif isinstance(value, int):
                attributes[name] = {"int": value}
            else:
                attributes[name] = {"string": value}
        entry: dict = {
            "name": self.name,
            "attributes": attributes,
            "capacity": {name: {"value": value} for name, value in self.capacity.items()},
        }
        if self.multiple_allocations:
            entry["allowMultipleAllocations"] = True
        return entry

    def to_dict(self) -> dict:
        return {
            "pool": self.pool,
            "name": self.name,
            "node": self.node,
            "attributes": dict(self.attributes),
            "version_attributes": sorted(self.version_attributes),
            "capacity": dict(self.capacity),
            "taints": [list(t) for t in self.taints],
            "multiple_allocations": self.multiple_allocations,
            "binding_conditions": list(self.binding_conditions),
            "binding_failure_conditions": list(self.binding_failure_conditions),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> PublishedDevice:
        return cls(
            pool=data["pool"],
            name=data["name"],
            node=data.get("node"),
            attributes=FrozenMap(data.get("attributes") or {}),
            version_attributes=frozenset(data.get("version_attributes") or ()),
            capacity=FrozenMap(data.get("capacity") or {}),
            taints=tuple(tuple(t) for t in data.get("taints") or ()),  # type: ignore[misc]
            multiple_allocations=bool(data.get("multiple_allocations")),
            binding_conditions=tuple(data.get("binding_conditions") or ()),
            binding_failure_conditions=tuple(data.get("binding_failure_conditions") or ()),
        )


def latest_slices(slices: Iterable[Mapping]) -> list[Mapping]:
    """Only slices of each pool's highest generation: consumers ignore older ones, and a
    driver that is republishing may briefly leave both."""
    slices = list(slices)
    newest: dict[str, int] = {}
    for s in slices:
        pool = s["spec"]["pool"]
        newest[pool["name"]] = max(newest.get(pool["name"], 0), int(pool.get("generation", 0)))
    return [
        s
        for s in slices
        if int(s["spec"]["pool"].get("generation", 0)) == newest[s["spec"]["pool"]["name"]]
    ]


def published_devices(slices: Iterable[Mapping], driver: str) -> tuple[PublishedDevice, ...]:
    out: list[PublishedDevice] = []
    for s in latest_slices(x for x in slices if x.get("spec", {}).get("driver") == driver):
        spec = s["spec"]
        for device in spec.get("devices") or ():
            attrs = device_attributes(device, driver, include_versions=True)
            versions = frozenset(
                resolve_name(n, driver)
                for n, typed in (device.get("attributes") or {}).items()
                if typed.get("version") is not None
            )
            taints = tuple(
                (t.get("key", ""), t.get("value", "") or "", t.get("effect", ""))
                for t in device.get("taints") or ()
            )
            out.append(
                PublishedDevice(
                    pool=spec["pool"]["name"],
                    name=device["name"],
                    node=device.get("nodeName") or spec.get("nodeName"),
                    attributes=FrozenMap(attrs),
                    version_attributes=versions,
                    capacity=FrozenMap(device_capacity(device, driver)),
                    taints=taints,
                    multiple_allocations=bool(device.get("allowMultipleAllocations")),
                    binding_conditions=tuple(device.get("bindingConditions") or ()),
                    binding_failure_conditions=tuple(device.get("bindingFailureConditions") or ()),
                )
            )
    return tuple(sorted(out, key=lambda d: (d.node or "", d.pool, d.name)))


def class_expressions(device_class: Mapping) -> list[str]:
    return [
        sel["cel"]["expression"]
        for sel in (device_class.get("spec") or {}).get("selectors") or ()
        if sel.get("cel", {}).get("expression")
    ]
