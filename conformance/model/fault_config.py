"""The fault kinds, and the profile's `faults` section: how each kind is injected
(docs/profile.md, "Faults").

    faults:
      taint:     {method: device-taint-rule}          # the default; any driver
      withdraw:  {method: command, command: [...], undo: [...], timeout: 30s}
      unhealthy: {method: exec, command: [...], undo: [...], container: plugin}
      fail-prepare: {method: python, entryPoint: "pkg.module:Class", options: {...}}

Pure data: nothing is imported or run here; `conformance.faults.registry` does that.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import Field, ValidationInfo, field_validator
from pydantic.json_schema import SkipJsonSchema

from conformance.model.frozen import FrozenMap
from conformance.model.schema import describe
from conformance.model.typed import Strict, argv, checked, duration, fail, mapping_of, text

TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")


class FaultKind(enum.Enum):
    WITHDRAW = "withdraw"  # the device disappears from the driver's ResourceSlices
    UNHEALTHY = "unhealthy"  # the driver's health service reports the device unhealthy
    RECOVER = "recover"  # healthy again (the undo of unhealthy, unless configured apart)
    FAIL_PREPARE = "fail-prepare"  # NodePrepareResources answers an error
    DELAY_PREPARE = "delay-prepare"  # NodePrepareResources is slow
    # The driver reports one of a device's bindingFailureConditions True for its next
    # allocations instead of its bindingConditions (DRADeviceBindingConditions).
    FAIL_BINDING = "fail-binding"
    TAINT = "taint"  # the device carries a taint
    # The driver itself publishes the taint in its ResourceSlice (spec.devices[].taints):
    # the same taint()/untaint() operations, through the driver's own channel.
    DRIVER_TAINT = "driver-taint"

    @classmethod
    def parse(cls, name: str) -> FaultKind:
        return cls(name)


FAULT_KINDS: tuple[str, ...] = tuple(k.value for k in FaultKind)

# The fault methods, named once: the profile's schema below has one spec class per method, and
# conformance.faults.registry one injector factory per method (tests/unit/faults tie both).
FaultMethod = Literal["device-taint-rule", "command", "exec", "python"]
METHODS: tuple[str, ...] = get_args(FaultMethod)
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


# --- the section's schema (the profile loader validates with it) ------------------------------

Argv = argv(PLACEHOLDERS)
Timeout = duration("a positive duration such as 30s or 2m")
ContainerName = text("a container name")
EntryPoint = text('"module:Class" or an entry point name')
Options = mapping_of(str, Any)
_ENTRY_FORM = f'"module:Class", or the name of an entry point in group {ENTRY_POINT_GROUP}'


class _Spec(Strict):
    unused_suffix: ClassVar[str] = ""

    def domain(self, kind: FaultKind) -> FaultSpec:
        return FaultSpec(kind, self.method)  # type: ignore[attr-defined]


class TaintRuleSpec(_Spec):
    method: Literal["device-taint-rule"]


class CommandSpec(_Spec):
    method: Literal["command"]
    command: Argv = Field(description="an argv list such as [my-tool, withdraw, '{device}']")
    undo: Argv = Field((), description="an argv taking the fault back")
    timeout: Timeout = Field(DEFAULT_TIMEOUT, description="how long a command may take")

    def domain(self, kind: FaultKind) -> FaultSpec:
        return FaultSpec(kind, self.method, self.command, self.undo, self.timeout)


class ExecSpec(CommandSpec):
    method: Literal["exec"]  # type: ignore[assignment]
    container: ContainerName | None = Field(
        None, description="the kubelet-plugin pod's container (default: the first)"
    )

    def domain(self, kind: FaultKind) -> FaultSpec:
        command, undo = self.command, self.undo
        return FaultSpec(kind, self.method, command, undo, self.timeout, self.container)


class PythonSpec(_Spec):
    method: Literal["python"]
    entry_point: EntryPoint = Field(description=_ENTRY_FORM)
    options: Options = Field(default_factory=dict, description="the injector's")
    timeout: Timeout = Field(DEFAULT_TIMEOUT, description="how long an injection may take")

    def domain(self, kind: FaultKind) -> FaultSpec:
        return FaultSpec(
            kind, self.method, timeout=self.timeout, entry_point=self.entry_point,
            options=FrozenMap(self.options),
        )  # fmt: skip


Spec = Annotated[TaintRuleSpec | CommandSpec | ExecSpec | PythonSpec, Field(discriminator="method")]
_SPEC_FORM = "{method: " + "|".join(METHODS) + ", ...}"


def _legacy_method(value: Any) -> Any:
    fail(
        f"a single faults.method ({describe(value)}) is no longer read; {_NEW_FORM}"
        + (
            "; the fake driver's control channel is now the python method its profile names "
            "(drivers/fake/profile.yaml, faults)"
            if value == "fake-driver-control"
            else ""
        )
    )


LegacyMethod = SkipJsonSchema[checked(Any, _legacy_method)]


class FaultsSection(Strict):
    """`faults`: fault kind -> how to inject it."""

    mapping_form: ClassVar[str] = "a mapping of fault kind to {method: ...}"

    withdraw: Spec | None = Field(None, description=_SPEC_FORM)
    unhealthy: Spec | None = Field(None, description=_SPEC_FORM)
    recover: Spec | None = Field(None, description=_SPEC_FORM)
    fail_prepare: Spec | None = Field(None, alias="fail-prepare", description=_SPEC_FORM)
    delay_prepare: Spec | None = Field(None, alias="delay-prepare", description=_SPEC_FORM)
    fail_binding: Spec | None = Field(None, alias="fail-binding", description=_SPEC_FORM)
    taint: Spec | None = Field(None, description=_SPEC_FORM)
    driver_taint: Spec | None = Field(None, alias="driver-taint", description=_SPEC_FORM)
    # The single method of an older format: named as such, never read.
    method: LegacyMethod = Field(None, exclude=True)

    @field_validator(*(k.value.replace("-", "_") for k in FaultKind))
    @classmethod
    def _fits_kind(cls, spec: Any, info: ValidationInfo) -> Any:
        kind = FaultKind(info.field_name.replace("_", "-"))
        if spec is not None and spec.method == "device-taint-rule" and kind is not FaultKind.TAINT:
            fail(
                f"device-taint-rule can only inject taint faults, not {kind.value} "
                "(use command, exec or python)",
                spec.method,
                "method",
            )
        if kind is FaultKind.RECOVER and getattr(spec, "undo", ()):
            fail("recover is itself an undo; remove undo", spec.method, "undo")
        return spec

    def domain(self) -> FaultsConfig:
        specs = dict(FaultsConfig().specs)
        for kind in FaultKind:
            spec = getattr(self, kind.value.replace("-", "_"))
            if spec is not None:
                specs[kind] = spec.domain(kind)
        return FaultsConfig(FrozenMap(specs))
