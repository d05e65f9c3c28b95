"""Fault controls: the control ConfigMap's format and the driver's live fault state.

ConfigMap ``fake-dra-control`` keys are node names, plus ``_all`` for every
node (ConfigMap keys cannot be ``*``). Each value is a JSON (or YAML) object::

    {
      "devices": {
        "<device>": {
          "health": "Unhealthy",               # Healthy | Unhealthy | Unknown
          "healthMessage": "fan failure",
          "withdrawn": true,                   # republish without the device
          "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
          "failPrepare": {"id": "a1", "count": 2},  # or {"id": "a1", "always": true}
          # the next allocations of a device with binding conditions get its first
          # bindingFailureCondition True instead of its bindingConditions (fakedriver.binding)
          "failBinding": {"id": "c3", "count": 1}
        }
      },
      "failPrepare": {"id": "b2", "count": 1},  # any prepare on the node
      "prepareDelaySeconds": 2.5,
      "misbehaviours": {"<name>": true}  # names: fakedriver.misbehave.MISBEHAVIOURS
    }

The node's value overrides ``_all`` field by field (devices merge per device,
misbehaviours per name). ``failPrepare.id`` (and ``failBinding.id``) lets the driver count
consumed failures across ConfigMap updates: a new id starts a new budget.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from fakedriver.misbehave import MISBEHAVIOURS, health

ALL_NODES_KEY = "_all"
HEALTH_VALUES = ("Healthy", "Unhealthy", "Unknown")
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "effect": self.effect}


# The driver's own taint on a device it finds unhealthy (as health-monitoring drivers do): new
# allocations keep off it, its current users keep running. Gone once the device recovers.
UNHEALTHY_TAINT = Taint("fake.dra-conformance.io/unhealthy", "", "NoSchedule")


@dataclass(frozen=True)
class FailPrepare:
    id: str
    count: int | None  # None: fail every prepare

    def to_dict(self) -> dict[str, Any]:
        if self.count is None:
            return {"id": self.id, "always": True}
        return {"id": self.id, "count": self.count}


@dataclass(frozen=True)
class DeviceControls:
    health: str | None = None
    health_message: str = ""
    withdrawn: bool = False
    taints: tuple[Taint, ...] = ()
    fail_prepare: FailPrepare | None = None
    fail_binding: FailPrepare | None = None  # the same budget, for binding failures

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.health:
            out["health"] = self.health
        if self.health_message:
            out["healthMessage"] = self.health_message
        if self.withdrawn:
            out["withdrawn"] = True
        if self.taints:
            out["taints"] = [t.to_dict() for t in self.taints]
        if self.fail_prepare:
            out["failPrepare"] = self.fail_prepare.to_dict()
        if self.fail_binding:
            out["failBinding"] = self.fail_binding.to_dict()
        return out


@dataclass(frozen=True)
class NodeControls:
    devices: Mapping[str, DeviceControls] = field(default_factory=dict)
    fail_prepare: FailPrepare | None = None
    prepare_delay_seconds: float = 0.0
    misbehaviours: frozenset[str] = frozenset()
    errors: tuple[str, ...] = ()

    def device(self, name: str) -> DeviceControls:
        return self.devices.get(name) or DeviceControls()

    def to_dict(self) -> dict[str, Any]:
        devices = {k: v.to_dict() for k, v in sorted(self.devices.items()) if v.to_dict()}
        return {
            "devices": devices,
            "failPrepare": self.fail_prepare.to_dict() if self.fail_prepare else None,
            "prepareDelaySeconds": self.prepare_delay_seconds,
            "misbehaviours": sorted(self.misbehaviours),
        }


def _load(text: str, where: str, errors: list[str]) -> dict[str, Any]:
    try:
        value = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        errors.append(f"{where}: not JSON/YAML: {exc}")
        return {}
    if not isinstance(value, dict):
        errors.append(f"{where}: must be an object")
        return {}
    return value


def _fail_prepare(raw: Any, where: str, errors: list[str]) -> FailPrepare | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not str(raw.get("id") or ""):
        errors.append(f"{where}: must be an object with an id")
        return None
    if raw.get("always"):
        return FailPrepare(id=str(raw["id"]), count=None)
    count = raw.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        errors.append(f"{where}.count: {count!r} must be a non-negative integer")
        return None
    return FailPrepare(id=str(raw["id"]), count=count)


def _taints(raw: Any, where: str, errors: list[str]) -> tuple[Taint, ...]:
    if not isinstance(raw, list):
        errors.append(f"{where}: must be a list")
        return ()
    taints = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or not item.get("key"):
            errors.append(f"{where}[{i}]: must be an object with a key")
            continue
        effect = str(item.get("effect") or "NoSchedule")
        if effect not in TAINT_EFFECTS:
            errors.append(f"{where}[{i}].effect: {effect!r} must be one of {TAINT_EFFECTS}")
            continue
        taints.append(Taint(str(item["key"]), str(item.get("value") or ""), effect))
    return tuple(taints)


def _device(base: DeviceControls, raw: Any, where: str, errors: list[str]) -> DeviceControls:
    if not isinstance(raw, Mapping):
        errors.append(f"{where}: must be an object")
        return base
    updates: dict[str, Any] = {}
    if "health" in raw:
        health = raw["health"]
        if health is not None and health not in HEALTH_VALUES:
            errors.append(f"{where}.health: {health!r} must be one of {HEALTH_VALUES}")
        else:
            updates["health"] = health
    if "healthMessage" in raw:
        updates["health_message"] = str(raw["healthMessage"] or "")
    if "withdrawn" in raw:
        updates["withdrawn"] = bool(raw["withdrawn"])
    if "taints" in raw:
        updates["taints"] = _taints(raw["taints"] or [], f"{where}.taints", errors)
    if "failPrepare" in raw:
        updates["fail_prepare"] = _fail_prepare(raw["failPrepare"], f"{where}.failPrepare", errors)
    if "failBinding" in raw:
        updates["fail_binding"] = _fail_prepare(raw["failBinding"], f"{where}.failBinding", errors)
    return replace(base, **updates)


def _merge(
    base: NodeControls, raw: Mapping[str, Any], where: str, errors: list[str]
) -> NodeControls:
    devices = dict(base.devices)
    raw_devices = raw.get("devices") or {}
    if not isinstance(raw_devices, Mapping):
        errors.append(f"{where}.devices: must be an object keyed by device name")
        raw_devices = {}
    for name, device_raw in raw_devices.items():
        devices[str(name)] = _device(
            devices.get(str(name)) or DeviceControls(),
            device_raw,
            f"{where}.devices.{name}",
            errors,
        )
    fail = base.fail_prepare
    if "failPrepare" in raw:
        fail = _fail_prepare(raw["failPrepare"], f"{where}.failPrepare", errors)
    delay = base.prepare_delay_seconds
    if "prepareDelaySeconds" in raw:
        value = raw["prepareDelaySeconds"]
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            delay = float(value)
        else:
            errors.append(f"{where}.prepareDelaySeconds: {value!r} must be a number >= 0")
    misbehaving = set(base.misbehaviours)
    raw_mis = raw.get("misbehaviours") or {}
    if isinstance(raw_mis, list):  # a plain list means "these are on"
        raw_mis = {name: True for name in raw_mis}
    if not isinstance(raw_mis, Mapping):
        errors.append(f"{where}.misbehaviours: must be an object of name -> bool")
        raw_mis = {}
    for name, enabled in raw_mis.items():
        if name not in MISBEHAVIOURS:
            errors.append(f"{where}.misbehaviours: unknown {name!r}")
        elif enabled:
            misbehaving.add(name)
        else:
            misbehaving.discard(name)
    return NodeControls(
        devices=devices,
        fail_prepare=fail,
        prepare_delay_seconds=delay,
        misbehaviours=frozenset(misbehaving),
    )


def parse_controls(data: Mapping[str, str] | None, node_name: str) -> NodeControls:
    """The effective controls of one node from the ConfigMap's data."""
    data = data or {}
    errors: list[str] = []
    controls = NodeControls()
    for key in (ALL_NODES_KEY, node_name):
        if key in data:
            controls = _merge(controls, _load(data[key], key, errors), key, errors)
    return replace(controls, errors=tuple(errors))


def _with_health_taints(controls: NodeControls, unhealthy: Iterable[str]) -> NodeControls:
    devices = dict(controls.devices)
    for name in unhealthy:
        device = devices.get(name) or DeviceControls()
        devices[name] = replace(
            device,
            health="Unhealthy",
            health_message=device.health_message or "unhealthy before",
            taints=(*device.taints, UNHEALTHY_TAINT),
        )
    return replace(controls, devices=devices)


class FaultState:
    """The controls in force plus what they consumed, shared by all components.

    Listeners run after every update (republish slices, refresh health, ...).
    Failure budgets are persisted so a driver restart does not refill them.
    """

    def __init__(self, counters_file: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._controls = NodeControls()
        self._resource_version = ""
        self._consumed: dict[str, int] = {}
        self._taint_times: dict[tuple[str, Taint], str] = {}
        self._published = NodeControls()
        self._ever_unhealthy: frozenset[str] = frozenset()
        self._listeners: list[Callable[[NodeControls], None]] = []
        self._counters_file = counters_file
        if counters_file and counters_file.is_file():
            try:
                self._consumed = {
                    str(k): int(v) for k, v in json.loads(counters_file.read_text()).items()
                }
            except (ValueError, OSError, AttributeError):
                self._consumed = {}

    @property
    def controls(self) -> NodeControls:
        return self._controls

    @property
    def resource_version(self) -> str:
        return self._resource_version

    @property
    def published(self) -> NodeControls:
        """The controls as the driver acts on them: unhealthy devices carry UNHEALTHY_TAINT
        (and a misbehaviour may keep a device once unhealthy so)."""
        return self._published

    def misbehaving(self, name: str) -> bool:
        return name in self._controls.misbehaviours

    def add_listener(self, listener: Callable[[NodeControls], None]) -> None:
        self._listeners.append(listener)

    def update(self, controls: NodeControls, resource_version: str = "") -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with self._lock:
            self._controls = controls
            self._resource_version = resource_version
            unhealthy = {n for n, d in controls.devices.items() if d.health == "Unhealthy"}
            sticky = health.sticky(controls.misbehaviours)
            self._ever_unhealthy = (self._ever_unhealthy | unhealthy) if sticky else frozenset()
            self._published = _with_health_taints(controls, unhealthy | self._ever_unhealthy)
            # Remember when each taint first appeared: timeAdded must not move
            # on every republish, or tolerationSeconds would never run out.
            published = self._published.devices.items()
            current = {(name, t) for name, d in published for t in d.taints}
            self._taint_times = {k: v for k, v in self._taint_times.items() if k in current}
            for key in current:
                self._taint_times.setdefault(key, now)
        for listener in list(self._listeners):
            listener(controls)

    def taint_time(self, device: str, taint: Taint) -> str | None:
        return self._taint_times.get((device, taint))

    def take_prepare_failure(self, devices: Iterable[str]) -> str | None:
        """Consume one injected failure that applies to a prepare of these devices."""
        with self._lock:
            candidates: list[tuple[str, FailPrepare]] = []
            if self._controls.fail_prepare:
                candidates.append(("node", self._controls.fail_prepare))
            for name in devices:
                fail = self._controls.device(name).fail_prepare
                if fail:
                    candidates.append((f"device {name}", fail))
            for scope, fail in candidates:
                if fail.count is None:
                    return f"injected prepare failure ({scope}, every prepare)"
                used = self._consumed.get(fail.id, 0)
                if used < fail.count:
                    self._consumed[fail.id] = used + 1
                    self._save_counters()
                    return f"injected prepare failure ({scope}, {used + 1} of {fail.count})"
        return None

    def take_binding_failure(self, device: str) -> str | None:
        """Consume one injected binding failure of this device, if any is left."""
        with self._lock:
            fail = self._controls.device(device).fail_binding
            if fail is None:
                return None
            if fail.count is None:
                return f"injected binding failure (device {device}, every allocation)"
            used = self._consumed.get(fail.id, 0)
            if used >= fail.count:
                return None
            self._consumed[fail.id] = used + 1
            self._save_counters()
            return f"injected binding failure (device {device}, {used + 1} of {fail.count})"

    def remaining_failures(self) -> dict[str, int | str]:
        with self._lock:
            out: dict[str, int | str] = {}
            fails = [self._controls.fail_prepare] + [
                f for d in self._controls.devices.values() for f in (d.fail_prepare, d.fail_binding)
            ]
            for fail in fails:
                if fail is None:
                    continue
                if fail.count is None:
                    out[fail.id] = "always"
                else:
                    out[fail.id] = max(0, fail.count - self._consumed.get(fail.id, 0))
            return out

    def _save_counters(self) -> None:
        if not self._counters_file:
            return
        tmp = self._counters_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._consumed, sort_keys=True))
        tmp.replace(self._counters_file)
