"""The device catalog: which fake devices each node has.

Format (YAML)::

    features:
      partitionableDevices: true     # render `partitionable` entries (DRAPartitionableDevices)
    nodes:                           # first entry whose glob matches the node name wins
    - match: "*-worker"
      devices:
      - {name: fa80-0, type: accelerator, model: fa-80, memory: 80Gi, numaNode: 0,
         interconnect: fabric-a, pcieRoot: pci0000:00}
      - {name: fs32-0, type: shared, model: fs-32, memory: 32Gi, allowMultipleAllocations: true,
         requestPolicy: {default: 8Gi, validRange: {min: 4Gi, step: 4Gi}}}
      partitionable:
      - {name: fp48-0, model: fp-48, memory: 48Gi, partitions: 4, numaNode: 1}
    default:                         # nodes no entry matches
      devices: [...]

A partitionable entry becomes a shared counter set (``memory``, ``partitions``)
plus ``<name>-p<i>`` partition devices and a ``<name>-whole`` device that
consumes all counters, so allocating one excludes the others.

A device with ``allowMultipleAllocations: true`` (DRAConsumableCapacity) may be allocated
to several claims at once, each consuming part of its ``memory``; ``requestPolicy``
(``default`` plus ``validValues`` or ``validRange {min, max, step}``) is published on that
capacity as is. ``firmware`` (a semantic version, default 1.4.2) is published as a version
attribute.

A device with ``bindingConditions`` (DRADeviceBindingConditions; optional
``bindingFailureConditions``, ``bindsToNode``) keeps a pod from binding until the driver
reports the conditions True in the claim's status (fakedriver.binding).
"""

from __future__ import annotations

import fnmatch
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fakedriver import DRIVER_NAME

DEVICE_TYPES = ("accelerator", "fpga", "partition", "shared", "fabric")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# A label name without prefix, as the API validates binding condition names (at most 4 each).
_CONDITION_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
MAX_BINDING_CONDITIONS = 4
_QUANTITY = re.compile(r"^([0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_FACTORS = {
    None: 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


class CatalogError(ValueError):
    """The catalog is invalid; the message names the offending field."""


def parse_quantity(text: str, where: str = "quantity") -> int:
    """Integer quantities with an optional SI or binary suffix, e.g. ``80Gi``."""
    match = _QUANTITY.match(str(text).strip())
    if not match:
        raise CatalogError(f"{where}: {text!r} is not an integer quantity such as 80Gi")
    return int(match.group(1)) * _FACTORS[match.group(2)]


def format_quantity(value: int) -> str:
    """The shortest exact binary form (``12Gi``, ``1536Mi``, ``7``)."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        factor = _FACTORS[suffix]
        if value and value % factor == 0:
            return f"{value // factor}{suffix}"
    return str(value)


@dataclass(frozen=True)
class CounterUse:
    counter_set: str
    counters: Mapping[str, str]


@dataclass(frozen=True)
class CounterSetSpec:
    name: str
    counters: Mapping[str, str]


# Every device's firmware unless its catalog entry names one: a version attribute, so
# selectors can compare versions (semver(), isGreaterThan).
DEFAULT_FIRMWARE = "1.4.2"
_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
)


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    type: str
    model: str
    memory: str
    uuid: str
    numa_node: int | None = None
    interconnect: str | None = None
    pcie_root: str | None = None
    parent: str | None = None
    consumes: tuple[CounterUse, ...] = ()
    whole: bool | None = None  # partitionable entries only: the whole device or a partition
    allow_multiple_allocations: bool = False
    # The memory capacity's requestPolicy in wire form (quantities as strings), or None.
    request_policy: Mapping[str, Any] | None = None
    firmware: str = DEFAULT_FIRMWARE  # published as a version attribute (semantic version)
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    binds_to_node: bool = False


@dataclass(frozen=True)
class NodeInventory:
    """What one node has: devices in catalog order, plus shared counter sets."""

    devices: tuple[DeviceSpec, ...]
    counter_sets: tuple[CounterSetSpec, ...] = ()

    def by_name(self) -> dict[str, DeviceSpec]:
        return {d.name: d for d in self.devices}


@dataclass(frozen=True)
class Catalog:
    entries: tuple[tuple[str, Mapping[str, Any]], ...]
    default: Mapping[str, Any]
    partitionable: bool = True
    source: str = "<dict>"

    @classmethod
    def load(cls, path: str | Path) -> Catalog:
        try:
            data = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise CatalogError(f"{path}: cannot read catalog: {exc}") from exc
        return cls.from_dict(data or {}, source=str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<dict>") -> Catalog:
        if not isinstance(data, Mapping):
            raise CatalogError(f"{source}: the catalog must be a mapping")
        features = data.get("features") or {}
        entries = []
        for i, entry in enumerate(data.get("nodes") or []):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("match"), str):
                raise CatalogError(f"{source}: nodes[{i}].match: a glob string is required")
            entries.append((entry["match"], entry))
        catalog = cls(
            entries=tuple(entries),
            default=data.get("default") or {"devices": []},
            partitionable=bool(features.get("partitionableDevices", True)),
            source=source,
        )
        # Validate every set eagerly so a bad catalog fails at start, not on
        # the first node that happens to match the broken entry.
        for i, (_, entry) in enumerate(catalog.entries):
            catalog._build("validation-node", entry, f"{source}: nodes[{i}]")
        catalog._build("validation-node", catalog.default, f"{source}: default")
        return catalog

    def entry_for(self, node_name: str) -> tuple[str, Mapping[str, Any]]:
        for i, (pattern, entry) in enumerate(self.entries):
            if fnmatch.fnmatchcase(node_name, pattern):
                return f"nodes[{i}]", entry
        return "default", self.default

    def for_node(self, node_name: str) -> NodeInventory:
        where, entry = self.entry_for(node_name)
        return self._build(node_name, entry, f"{self.source}: {where}")

    def _build(self, node_name: str, entry: Mapping[str, Any], where: str) -> NodeInventory:
        devices: list[DeviceSpec] = []
        counter_sets: list[CounterSetSpec] = []
        for i, raw in enumerate(entry.get("devices") or []):
            devices.append(_device(node_name, raw, f"{where}.devices[{i}]"))
        if self.partitionable:
            for i, raw in enumerate(entry.get("partitionable") or []):
                counter_set, parts = _partitionable(node_name, raw, f"{where}.partitionable[{i}]")
                counter_sets.append(counter_set)
                devices.extend(parts)
        seen: set[str] = set()
        for device in devices:
            if device.name in seen:
                raise CatalogError(f"{where}: device name {device.name!r} is not unique")
            seen.add(device.name)
        if len({c.name for c in counter_sets}) != len(counter_sets):
            raise CatalogError(f"{where}: partitionable names must be unique")
        return NodeInventory(devices=tuple(devices), counter_sets=tuple(counter_sets))


def device_uuid(node_name: str, device_name: str) -> str:
    # Deterministic, so a restarted driver publishes the same identity.
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{DRIVER_NAME}/{node_name}/{device_name}"))


def _name(raw: Mapping[str, Any], where: str) -> str:
    name = raw.get("name")
    if not isinstance(name, str) or not _DNS_LABEL.match(name):
        raise CatalogError(f"{where}.name: {name!r} must be a DNS label (a-z, 0-9, '-')")
    return name


def _optional_int(raw: Mapping[str, Any], key: str, where: str) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise CatalogError(f"{where}.{key}: {value!r} must be an integer")
    return value


def _optional_str(raw: Mapping[str, Any], key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise CatalogError(f"{where}.{key}: {value!r} must be a string")
    return value


def _device(node_name: str, raw: Any, where: str) -> DeviceSpec:
    if not isinstance(raw, Mapping):
        raise CatalogError(f"{where}: a mapping is required")
    name = _name(raw, where)
    kind = raw.get("type")
    if kind not in DEVICE_TYPES:
        raise CatalogError(f"{where}.type: {kind!r} must be one of {', '.join(DEVICE_TYPES)}")
    model = raw.get("model")
    if not isinstance(model, str) or not model:
        raise CatalogError(f"{where}.model: a non-empty string is required")
    memory = str(raw.get("memory", "0"))
    parse_quantity(memory, f"{where}.memory")
    shared = raw.get("allowMultipleAllocations", False)
    if not isinstance(shared, bool):
        raise CatalogError(f"{where}.allowMultipleAllocations: {shared!r} must be true or false")
    policy = _request_policy(raw.get("requestPolicy"), f"{where}.requestPolicy")
    if policy is not None and not shared:
        # The API server rejects a requestPolicy on a device that cannot be shared.
        raise CatalogError(f"{where}.requestPolicy: needs allowMultipleAllocations: true")
    binding = _conditions(raw, "bindingConditions", where)
    failure = _conditions(raw, "bindingFailureConditions", where)
    if set(binding) & set(failure):
        raise CatalogError(f"{where}: a condition cannot be both a binding and a failure one")
    if failure and not binding:
        raise CatalogError(f"{where}.bindingFailureConditions: needs bindingConditions")
    binds_to_node = raw.get("bindsToNode", False)
    if not isinstance(binds_to_node, bool):
        raise CatalogError(f"{where}.bindsToNode: {binds_to_node!r} must be true or false")
    return DeviceSpec(
        name=name,
        type=kind,
        model=model,
        memory=memory,
        uuid=_optional_str(raw, "uuid", where) or device_uuid(node_name, name),
        numa_node=_optional_int(raw, "numaNode", where),
        interconnect=_optional_str(raw, "interconnect", where),
        pcie_root=_optional_str(raw, "pcieRoot", where),
        allow_multiple_allocations=shared,
        request_policy=policy,
        firmware=_firmware(raw, where),
        binding_conditions=binding,
        binding_failure_conditions=failure,
        binds_to_node=binds_to_node,
    )


def _conditions(raw: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    """bindingConditions / bindingFailureConditions: distinct condition types, at most 4."""
    value = raw.get(key, [])
    if (
        not isinstance(value, list)
        or len(value) > MAX_BINDING_CONDITIONS
        or len(set(map(str, value))) != len(value)
        or not all(isinstance(v, str) and _CONDITION_NAME.match(v) for v in value)
    ):
        raise CatalogError(
            f"{where}.{key}: {value!r} must be a list of at most {MAX_BINDING_CONDITIONS} "
            "distinct condition names such as Attached"
        )
    return tuple(value)


def _firmware(raw: Mapping[str, Any], where: str) -> str:
    value = raw.get("firmware", DEFAULT_FIRMWARE)
    if not isinstance(value, str) or not _SEMVER_RE.match(value):
        raise CatalogError(f"{where}.firmware: {value!r} must be a semantic version like 1.4.2")
    return value


def _request_policy(raw: Any, where: str) -> dict[str, Any] | None:
    """CapacityRequestPolicy: `default` plus at most one of `validValues`, `validRange`."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or set(raw) - {"default", "validValues", "validRange"}:
        raise CatalogError(f"{where}: a mapping of default, validValues or validRange is required")
    if "validValues" in raw and "validRange" in raw:
        raise CatalogError(f"{where}: validValues and validRange exclude each other")
    out: dict[str, Any] = {}
    if "default" in raw:
        out["default"] = _quantity_text(raw["default"], f"{where}.default")
    elif "validValues" in raw or "validRange" in raw:
        raise CatalogError(f"{where}.default: required with validValues or validRange")
    if "validValues" in raw:
        values = raw["validValues"]
        if not isinstance(values, list) or not values:
            raise CatalogError(f"{where}.validValues: a non-empty list of quantities is required")
        out["validValues"] = [
            _quantity_text(v, f"{where}.validValues[{i}]") for i, v in enumerate(values)
        ]
    if "validRange" in raw:
        bounds = raw["validRange"]
        if not isinstance(bounds, Mapping) or set(bounds) - {"min", "max", "step"}:
            raise CatalogError(f"{where}.validRange: a mapping of min, max, step is required")
        out["validRange"] = {
            k: _quantity_text(v, f"{where}.validRange.{k}") for k, v in bounds.items()
        }
    return out


def _quantity_text(value: Any, where: str) -> str:
    parse_quantity(str(value), where)
    return str(value)


def _partitionable(node_name: str, raw: Any, where: str) -> tuple[CounterSetSpec, list[DeviceSpec]]:
    if not isinstance(raw, Mapping):
        raise CatalogError(f"{where}: a mapping is required")
    name = _name(raw, where)
    model = raw.get("model")
    if not isinstance(model, str) or not model:
        raise CatalogError(f"{where}.model: a non-empty string is required")
    total = parse_quantity(str(raw.get("memory", "")), f"{where}.memory")
    count = raw.get("partitions")
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 16:
        raise CatalogError(f"{where}.partitions: {count!r} must be an integer from 1 to 16")
    if total % count:
        raise CatalogError(f"{where}.memory: {raw.get('memory')} is not divisible by {count}")
    share = format_quantity(total // count)
    common = {
        "type": "partition",
        "model": model,
        "numa_node": _optional_int(raw, "numaNode", where),
        "pcie_root": _optional_str(raw, "pcieRoot", where),
        "interconnect": _optional_str(raw, "interconnect", where),
        "parent": name,
    }
    counter_set = CounterSetSpec(
        name=name, counters={"memory": format_quantity(total), "partitions": str(count)}
    )
    devices = [
        DeviceSpec(
            name=f"{name}-p{i}",
            memory=share,
            uuid=device_uuid(node_name, f"{name}-p{i}"),
            consumes=(CounterUse(name, {"memory": share, "partitions": "1"}),),
            whole=False,
            **common,
        )
        for i in range(count)
    ]
    devices.append(
        DeviceSpec(
            name=f"{name}-whole",
            memory=format_quantity(total),
            uuid=device_uuid(node_name, f"{name}-whole"),
            consumes=(CounterUse(name, dict(counter_set.counters)),),
            whole=True,
            **common,
        )
    )
    return counter_set, devices
