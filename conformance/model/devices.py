"""The devices a driver publishes (from ResourceSlices), and which of them each device kind of
the profile can use. Pure functions over API dicts (camelCase wire form), so they are tested
without a cluster and shared by the run context, `profile check` and the lease.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from conformance.model.cel import Scalar, device_attributes, device_capacity, resolve_name
from conformance.model.frozen import FrozenMap
from conformance.model.partitionable import PARTITIONABLE_KINDS
from conformance.model.profile import BINDING_KIND, CONSUMABLE_KIND, SELECTOR_ALIASES, Profile

if TYPE_CHECKING:
    from conformance.cel import CelEvaluator, MatchResult


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


def selector_results(
    expressions: Sequence[str],
    devices: Sequence[PublishedDevice],
    driver: str,
    *,
    evaluator: CelEvaluator | None = None,
) -> list[list[MatchResult]]:
    """[expression][device]: each selector evaluated on each device as the scheduler does
    (conformance.cel); an evaluation error is a non-match that carries its message."""
    from conformance.cel import cel_evaluator

    if not expressions:
        return []
    if not devices:
        return [[] for _ in expressions]
    evaluator = evaluator or cel_evaluator()
    return evaluator.match(expressions, [(driver, d.slice_entry()) for d in devices])


def matching_devices(
    expressions: Sequence[str],
    devices: Iterable[PublishedDevice],
    driver: str,
    *,
    evaluator: CelEvaluator | None = None,
) -> frozenset[str]:
    """Ids of the devices every one of `expressions` selects, as the scheduler decides (an
    expression that errs on a device does not select it)."""
    return selection(expressions, devices, driver, evaluator=evaluator)[0]


def selection(
    expressions: Sequence[str],
    devices: Iterable[PublishedDevice],
    driver: str,
    *,
    evaluator: CelEvaluator | None = None,
) -> tuple[frozenset[str], dict[str, str]]:
    """From one evaluation: the ids of the devices every one of `expressions` selects, and
    device id -> evaluation error for the devices on which the allocator would fail the whole
    allocation. It evaluates the selectors in order (the class's, then the request's), stops at
    the first that does not select the device, and fails on the first that errs before that -
    it does not skip such a device."""
    devices = list(devices)
    rows = selector_results(expressions, devices, driver, evaluator=evaluator)
    selected = frozenset(d.id for i, d in enumerate(devices) if all(row[i].matches for row in rows))
    erring: dict[str, str] = {}
    for i, device in enumerate(devices):
        for row in rows:
            if row[i].error is not None:
                erring[device.id] = row[i].error
                break
            if not row[i].matches:
                break
    return selected, erring


def kind_device_sets(
    profile: Profile,
    devices: Sequence[PublishedDevice],
    device_classes: Mapping[str, Mapping],
    *,
    evaluator: CelEvaluator | None = None,
) -> dict[str, frozenset[str]]:
    """For each device kind of the profile, the ids of the devices it may be allocated: those
    its class's selectors and its own selector all select. `device_classes` maps class name ->
    DeviceClass dict as read from the cluster; a class missing there yields an empty set."""
    from conformance.cel import cel_evaluator

    evaluator = evaluator or cel_evaluator()
    # One helper process for them all: every class's and kind's selector on every device.
    every = [e for cls in device_classes.values() for e in class_expressions(cls)]
    every += [e for kind in profile.device_kinds if (e := _own_expression(profile, kind))]
    selector_results(sorted(set(every)), devices, profile.driver, evaluator=evaluator)
    out: dict[str, frozenset[str]] = {}
    for kind in profile.device_kinds:
        if _without_devices(profile, kind):
            out[kind] = frozenset()  # fewer selectors than aliases, or no partitionable block
            continue
        if kind == CONSUMABLE_KIND:
            out[kind] = _shareable(profile, devices, device_classes, evaluator)
            continue
        if kind == BINDING_KIND:
            out[kind] = _waiting_for_binding(profile, devices, device_classes, evaluator)
            continue
        class_name, expression = profile.kind_class_and_expression(kind)
        cls = device_classes.get(class_name)
        if cls is None:
            out[kind] = frozenset()
            continue
        expressions = class_expressions(cls) + ([expression] if expression else [])
        out[kind] = matching_devices(expressions, devices, profile.driver, evaluator=evaluator)
    return out


def _without_devices(profile: Profile, kind: str) -> bool:
    return (kind in SELECTOR_ALIASES and profile.aliased_selector(kind) is None) or (
        kind in PARTITIONABLE_KINDS and profile.partitionable is None
    )


def _own_expression(profile: Profile, kind: str) -> str | None:
    if kind in (CONSUMABLE_KIND, BINDING_KIND) or _without_devices(profile, kind):
        return None
    return profile.kind_class_and_expression(kind)[1]


def _shareable(
    profile: Profile,
    devices: Sequence[PublishedDevice],
    device_classes: Mapping[str, Mapping],
    evaluator: CelEvaluator | None,
) -> frozenset[str]:
    """The devices of the consumableCapacity class that allow multiple allocations; none
    without the section or its class."""
    section = profile.consumable_capacity
    if section is None:
        return frozenset()
    shareable = frozenset(d.id for d in devices if d.multiple_allocations)
    cls = device_classes.get(section.device_class)
    if cls is None:
        return frozenset()
    in_class = matching_devices(
        class_expressions(cls), devices, profile.driver, evaluator=evaluator
    )
    return shareable & in_class


def _waiting_for_binding(
    profile: Profile,
    devices: Sequence[PublishedDevice],
    device_classes: Mapping[str, Mapping],
    evaluator: CelEvaluator | None,
) -> frozenset[str]:
    """The devices of the bindingConditions class published with bindingConditions; none
    without the section or its class (or with the feature gate off: the API server drops the
    fields then)."""
    section = profile.binding_conditions
    if section is None:
        return frozenset()
    waiting = frozenset(d.id for d in devices if d.binding_conditions)
    cls = device_classes.get(section.device_class)
    if cls is None or not waiting:
        return frozenset()
    in_class = matching_devices(
        class_expressions(cls), devices, profile.driver, evaluator=evaluator
    )
    return waiting & in_class
