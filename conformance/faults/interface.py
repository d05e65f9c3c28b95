"""The fault-injection interface every method implements, vendors' own injectors included.

An injector is made for one fault kind of one test (`FaultContext.kind`), injects faults when a
scenario asks, and undoes all of them in `restore()` (also on `with` exit). A kind the injector
cannot produce raises `FaultNotSupported`; a fault that was asked for but could not be injected
or undone raises `FaultError`, which makes the requirement an *error*, never a failure of the
driver.

Optional: `sweep(run_id) -> list[str]` undoes every fault the run `run_id` injected, by any of
its processes, and names what it undid. The end-of-run sweep and `dra-conformance cleanup` call
it on one injector per configured method, so a run that was killed before its `restore()` still
leaves nothing behind. An injector can sweep only what it recorded with `FaultContext.run_id`.
Beside it, `recorded_faults() -> {fault: run id}` names the faults in effect and the run that
injected each, so `dra-conformance cleanup --all` finds a dead run that left only faults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from conformance.model.fault_config import FaultKind
from conformance.model.frozen import FrozenMap
from conformance.model.outcome import HarnessError


class FaultNotSupported(Exception):
    """This injector cannot produce that kind of fault."""


class FaultError(HarnessError):
    """A fault that was asked for could not be injected or undone (a harness-side error:
    the test ends an error, not a failure)."""


class FaultCommandError(FaultError):
    """A fault command is missing, failed or timed out; the message names fault and command."""

    def __init__(self, kind: str, argv: tuple[str, ...] | list[str], problem: str) -> None:
        self.kind = kind
        self.argv = tuple(argv)
        self.problem = problem
        super().__init__(f"fault {kind}: command {list(self.argv)} {problem}")


@dataclass(frozen=True)
class DeviceRef:
    """A device as published: driver, pool and device name (+ node if node-local)."""

    driver: str
    pool: str
    device: str
    node: str | None = None

    @property
    def node_name(self) -> str:
        # Node-local drivers usually name the pool after the node.
        return self.node or self.pool

    @classmethod
    def of(cls, driver: str, device: Any) -> DeviceRef:
        """From a published device (conformance.model.devices.PublishedDevice)."""
        return cls(driver, device.pool, device.name, device.node)


@dataclass(frozen=True)
class FaultContext:
    """What an injector is made with: the cluster, the driver and the profile's options."""

    kind: FaultKind
    driver: str
    run_id: str
    timeout: float  # seconds one injection (or its undo) may take
    api_client: Any = None  # kubernetes.client.ApiClient of the cluster under test
    kubeconfig: str | None = None
    kube_context: str | None = None
    driver_namespace: str | None = None  # the profile's readiness.daemonSet
    driver_daemonset: str | None = None
    taint_rule_version: str | None = None  # resource.k8s.io version serving DeviceTaintRules
    options: Mapping[str, Any] = field(default_factory=FrozenMap)  # faults.<kind>.options


@runtime_checkable
class SweepingInjector(Protocol):
    """An injector that can undo all faults of one run (see the module docstring)."""

    def sweep(self, run_id: str) -> list[str]: ...


@runtime_checkable
class RecordingInjector(Protocol):
    """An injector that names the faults in effect and the run that injected each."""

    def recorded_faults(self) -> Mapping[str, str]: ...


@runtime_checkable
class FaultInjector(Protocol):
    """Device faults a scenario can request; undone by `restore()` / on exit."""

    # Text the driver's error carries for an injected prepare failure (None: unknown).
    prepare_failure_text: str | None

    def supports(self, kind: FaultKind) -> bool: ...
    def taint(
        self, device: DeviceRef, key: str, value: str = "", effect: str = "NoSchedule"
    ) -> None: ...
    def untaint(self, device: DeviceRef, key: str) -> None: ...
    def mark_unhealthy(self, device: DeviceRef, message: str = "") -> None: ...
    def recover(self, device: DeviceRef) -> None: ...
    def withdraw(self, device: DeviceRef) -> None: ...
    def fail_prepare(
        self, node: str, device: DeviceRef | None = None, count: int | None = None
    ) -> None: ...
    def delay_prepare(self, node: str, seconds: float) -> None: ...
    def fail_binding(self, device: DeviceRef, count: int | None = 1) -> None: ...
    def restore(self) -> None: ...
    def __enter__(self) -> FaultInjector: ...
    def __exit__(self, *exc_info: object) -> None: ...


class InjectorBase:
    """Unsupported-by-default operations and the context-manager protocol.

    Subclass it, set `kinds` and override the operations you support and `restore()`. The
    operations a subclass defines run as Allure steps named after the fault (faults/steps.py).
    """

    kinds: frozenset[FaultKind] = frozenset()
    prepare_failure_text: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        from conformance.faults.steps import wrap_operations

        wrap_operations(cls)

    def supports(self, kind: FaultKind) -> bool:
        return kind in self.kinds

    def _unsupported(self, kind: FaultKind) -> FaultNotSupported:
        return FaultNotSupported(f"{type(self).__name__} cannot inject {kind.value} faults")

    def taint(
        self, device: DeviceRef, key: str, value: str = "", effect: str = "NoSchedule"
    ) -> None:
        raise self._unsupported(FaultKind.TAINT)

    def untaint(self, device: DeviceRef, key: str) -> None:
        raise self._unsupported(FaultKind.TAINT)

    def mark_unhealthy(self, device: DeviceRef, message: str = "") -> None:
        raise self._unsupported(FaultKind.UNHEALTHY)

    def recover(self, device: DeviceRef) -> None:
        raise self._unsupported(FaultKind.RECOVER)

    def withdraw(self, device: DeviceRef) -> None:
        raise self._unsupported(FaultKind.WITHDRAW)

    def fail_prepare(
        self, node: str, device: DeviceRef | None = None, count: int | None = None
    ) -> None:
        raise self._unsupported(FaultKind.FAIL_PREPARE)

    def delay_prepare(self, node: str, seconds: float) -> None:
        raise self._unsupported(FaultKind.DELAY_PREPARE)

    def fail_binding(self, device: DeviceRef, count: int | None = 1) -> None:
        """The next `count` allocations of `device` (every one if None) get one of its
        bindingFailureConditions True instead of its bindingConditions."""
        raise self._unsupported(FaultKind.FAIL_BINDING)

    def restore(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def sweep(self, run_id: str) -> list[str]:
        """Undo every fault of run `run_id`; an injector that records none has none to undo."""
        return []

    def recorded_faults(self) -> Mapping[str, str]:
        """Fault -> the run that injected it, for the faults in effect; none when unrecorded."""
        return {}

    def __enter__(self) -> FaultInjector:
        return self  # type: ignore[return-value]

    def __exit__(self, *exc_info: object) -> None:
        self.restore()
