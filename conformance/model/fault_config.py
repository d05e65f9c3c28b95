"""The fault kinds, and the profile's `faults` section: how each kind is injected
(docs/profile.md, "Faults").

    faults:
      taint:     {method: device-taint-rule}          # the default; any driver
      withdraw:  {method: command, command: [...], undo: [...], timeout: 30s}
      unhealthy: {method: exec, command: [...], undo: [...], container: plugin}
      fail-prepare: {method: python, entryPoint: "pkg.module:Class", options: {...}}

Pure parsing: nothing is imported or run here; `conformance.faults.registry` does that.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from conformance.model.frozen import FrozenMap
from conformance.model.schema import Problems, describe, join, parse_argv_template, parse_duration

TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")


class FaultKind(enum.Enum):
    WITHDRAW = "withdraw"  # the device disappears from the driver's ResourceSlices
    UNHEALTHY = "unhealthy"  # the driver's health service reports the device unhealthy
    RECOVER = "recover"  # healthy again (the undo of unhealthy, unless configured apart)
    FAIL_PREPARE = "fail-prepare"  # NodePrepareResources answers an error
    DELAY_PREPARE = "delay-prepare"  # NodePrepareResources is slow
    TAINT = "taint"  # the device carries a taint
    # The driver itself publishes the taint in its ResourceSlice (spec.devices[].taints):
    # the same taint()/untaint() operations, through the driver's own channel.
    DRIVER_TAINT = "driver-taint"

    @classmethod
    def parse(cls, name: str) -> FaultKind:
        return cls(name)


FAULT_KINDS: tuple[str, ...] = tuple(k.value for k in FaultKind)

METHODS = ("device-taint-rule", "command", "exec", "python")
FaultMethod = Literal["device-taint-rule", "command", "exec", "python"]
ENTRY_POINT_GROUP = "dra_conformance.faults"
DEFAULT_TIMEOUT = 60.0

# Placeholders an argv item may contain; each is also in the environment as DRA_<NAME>.
PLACEHOLDERS = (
    "kind",
    "driver",
    "node",
    "pool",
    "device",
    "message",
    "count",
    "seconds",
    "key",
    "value",
    "effect",
    "kubeconfig",
)

_METHOD_KEYS: Mapping[str, tuple[str, ...]] = {
    "device-taint-rule": ("method",),
    "command": ("method", "command", "undo", "timeout"),
    "exec": ("method", "command", "undo", "timeout", "container"),
    "python": ("method", "entryPoint", "options", "timeout"),
}
_ALL_KEYS = tuple(dict.fromkeys(k for keys in _METHOD_KEYS.values() for k in keys))
_NEW_FORM = (
    "choose a method per fault kind, e.g. faults: {withdraw: {method: command, "
    "command: [...], undo: [...]}} (docs/profile.md, Faults)"
)


@dataclass(frozen=True)
class FaultSpec:
    """How one fault kind is injected."""

    kind: FaultKind
    method: FaultMethod
    command: tuple[str, ...] = ()  # command, exec
    undo: tuple[str, ...] = ()  # command, exec; empty: nothing to undo
    timeout: float = DEFAULT_TIMEOUT
    container: str | None = None  # exec: the kubelet-plugin pod's container (default: first)
    entry_point: str | None = None  # python: "module:Class" or a name in ENTRY_POINT_GROUP
    options: Mapping[str, Any] = field(default_factory=FrozenMap)  # python

    @property
    def can_undo(self) -> bool:
        """Whether a fault of this spec can be taken back (python injectors always restore)."""
        return self.method in ("device-taint-rule", "python") or bool(self.undo)


@dataclass(frozen=True)
class FaultsConfig:
    """Fault kind -> how to inject it. `taint` defaults to device-taint-rule."""

    specs: Mapping[FaultKind, FaultSpec] = field(
        default_factory=lambda: FrozenMap(
            {FaultKind.TAINT: FaultSpec(FaultKind.TAINT, "device-taint-rule")}
        )
    )

    def spec(self, kind: FaultKind) -> FaultSpec | None:
        return self.specs.get(kind)

    def can_inject(self, kind: FaultKind) -> bool:
        if kind in self.specs:
            return True
        # Recovery is the undo of the unhealthy fault unless configured on its own.
        unhealthy = self.specs.get(FaultKind.UNHEALTHY)
        return kind is FaultKind.RECOVER and unhealthy is not None and unhealthy.can_undo

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k.value for k in FaultKind if self.can_inject(k))


def parse_faults(p: Problems, value: Any, path: str = "faults") -> FaultsConfig:
    """Validate the `faults` section; problems name the field (`faults.withdraw.command`)."""
    if value is None:
        return FaultsConfig()
    if not isinstance(value, Mapping):
        p.wrong(path, "a mapping of fault kind to {method: ...}", value)
        return FaultsConfig()
    if "method" in value:
        p.add(
            join(path, "method"),
            f"a single faults.method ({describe(value['method'])}) is no longer read; {_NEW_FORM}"
            + (
                "; the fake driver's control channel is now the python method with entryPoint "
                "fakedriver.faultplugin:FakeDriverFaults"
                if value["method"] == "fake-driver-control"
                else ""
            ),
        )
    specs = dict(FaultsConfig().specs)
    section = p.mapping(path, {k: v for k, v in value.items() if k != "method"}, FAULT_KINDS)
    for name, raw in (section or {}).items():
        if name in FAULT_KINDS:
            spec = _spec(p, join(path, name), FaultKind(name), raw)
            if spec is not None:
                specs[spec.kind] = spec
    return FaultsConfig(FrozenMap(specs))


def _spec(p: Problems, path: str, kind: FaultKind, raw: Any) -> FaultSpec | None:
    before = len(p.items)
    section = p.mapping(path, raw, _ALL_KEYS)
    if section is None:
        return None
    if "method" not in section:
        p.missing(join(path, "method"), "one of " + ", ".join(METHODS))
        return None
    method = p.choice(join(path, "method"), section["method"], METHODS)
    if method is None:
        return None
    for key in section:
        if key in _ALL_KEYS and key not in _METHOD_KEYS[method]:
            p.add(join(path, key), f"not used by method {method}")
    if method == "device-taint-rule":
        if kind is not FaultKind.TAINT:
            p.add(
                join(path, "method"),
                f"device-taint-rule can only inject taint faults, not {kind.value} "
                "(use command, exec or python)",
            )
            return None
        return FaultSpec(kind, method)
    timeout = DEFAULT_TIMEOUT
    if "timeout" in section:
        # Imported here: conformance.model.profile imports this module.
        seconds = parse_duration(section["timeout"])
        if seconds is None or seconds <= 0:
            p.wrong(
                join(path, "timeout"), "a positive duration such as 30s or 2m", section["timeout"]
            )
        else:
            timeout = seconds
    if method == "python":
        entry = section.get("entryPoint")
        if entry is None:
            p.missing(
                join(path, "entryPoint"),
                f'"module:Class", or the name of an entry point in group {ENTRY_POINT_GROUP}',
            )
        else:
            entry = p.string(
                join(path, "entryPoint"), entry, '"module:Class" or an entry point name'
            )
        options = section.get("options", {})
        if not isinstance(options, Mapping):
            p.wrong(join(path, "options"), "a mapping", options)
            options = {}
        if len(p.items) > before or not entry:
            return None
        return FaultSpec(
            kind, method, timeout=timeout, entry_point=entry, options=FrozenMap(options)
        )
    if "command" not in section:
        p.missing(join(path, "command"), "an argv list such as [my-tool, withdraw, '{device}']")
    command = _argv(p, join(path, "command"), section.get("command"))
    undo = _argv(p, join(path, "undo"), section["undo"]) if "undo" in section else ()
    if undo and kind is FaultKind.RECOVER:
        p.add(join(path, "undo"), "recover is itself an undo; remove undo")
    container = None
    if "container" in section:
        container = p.string(join(path, "container"), section["container"], "a container name")
    if len(p.items) > before or not command:
        return None
    return FaultSpec(kind, method, command, undo, timeout, container)  # type: ignore[arg-type]


def _argv(p: Problems, path: str, value: Any) -> tuple[str, ...]:
    return parse_argv_template(p, path, value, PLACEHOLDERS)
