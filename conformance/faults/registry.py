"""From the profile's `faults` section to injectors: one per method, chosen per fault kind, and
which fault kinds a profile cannot inject (the requirement is then *not run*)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.faults.interface import (
    DeviceRef,
    FaultContext,
    FaultError,
    FaultInjector,
    FaultKind,
    FaultNotSupported,
    InjectorBase,
    RecordingInjector,
    SweepingInjector,
)
from conformance.model.fault_config import FaultMethod, FaultsConfig, FaultSpec
from conformance.model.frozen import FrozenMap

if TYPE_CHECKING:
    from conformance.kube.client import K8sClients
    from conformance.model.profile import Profile
    from conformance.run.context import RunContext


def _command(spec: FaultSpec, context: FaultContext) -> FaultInjector:
    from conformance.faults.command import CommandInjector

    return CommandInjector(spec, context)  # type: ignore[return-value]


def _exec(spec: FaultSpec, context: FaultContext) -> FaultInjector:
    from conformance.faults.exec import ExecInjector

    return ExecInjector(spec, context)  # type: ignore[return-value]


def _python(spec: FaultSpec, context: FaultContext) -> FaultInjector:
    from conformance.faults.python import python_injector

    return python_injector(spec, context)


def _taint_rule(spec: FaultSpec, context: FaultContext) -> FaultInjector:
    from conformance.faults.taint_rule import taint_rule_injector

    return taint_rule_injector(spec, context)  # type: ignore[return-value]


# One factory per method of conformance.model.fault_config.METHODS; each method's module is
# imported only when a profile uses it.
INJECTOR_FACTORIES: Mapping[FaultMethod, Callable[[FaultSpec, FaultContext], FaultInjector]] = {
    "device-taint-rule": _taint_rule,
    "command": _command,
    "exec": _exec,
    "python": _python,
}


def injector_for(kind: FaultKind, faults: FaultsConfig, context: FaultContext) -> FaultInjector:
    """An injector for `kind` per the profile (FaultNotSupported if none is configured)."""
    spec = faults.spec(kind)
    if spec is None and kind is FaultKind.RECOVER and faults.can_inject(kind):
        raise FaultNotSupported(
            "recovery is the undo of faults.unhealthy: call recover() on the unhealthy injector"
        )
    if spec is None:
        raise FaultNotSupported(f"the profile has no fault method for {kind.value}")
    injector = INJECTOR_FACTORIES[spec.method](spec, context)
    if not injector.supports(kind):
        raise FaultError(
            f"faults.{spec.kind.value} (method {spec.method}) cannot inject {kind.value} faults"
        )
    recover = faults.spec(FaultKind.RECOVER)
    if kind is FaultKind.UNHEALTHY and recover is not None:
        return RecoveredBy(injector, lambda: INJECTOR_FACTORIES[recover.method](recover, context))
    return injector


class RecoveredBy(InjectorBase):
    """An unhealthy injector whose recovery is the profile's separate `faults.recover`: devices
    it marked unhealthy are recovered through it, on request or at `restore()`."""

    kinds = frozenset({FaultKind.UNHEALTHY, FaultKind.RECOVER})

    def __init__(self, unhealthy: FaultInjector, make_recover: Callable[[], FaultInjector]) -> None:
        self.unhealthy = unhealthy
        self.make_recover = make_recover
        self.marked: list[DeviceRef] = []
        self.prepare_failure_text = unhealthy.prepare_failure_text

    def mark_unhealthy(
        self, device: DeviceRef, message: str = "injected by dra-conformance"
    ) -> None:
        self.marked.append(device)
        self.unhealthy.mark_unhealthy(device, message)

    def recover(self, device: DeviceRef) -> None:
        self.make_recover().recover(device)
        self.marked = [d for d in self.marked if d != device]

    def restore(self) -> None:
        try:
            for device in list(reversed(self.marked)):
                self.recover(device)
        finally:
            self.unhealthy.restore()


def _profile_faults(profile: Any) -> FaultsConfig:
    return getattr(profile, "faults", None) or FaultsConfig()


def missing_faults(required_kinds: Iterable[str], profile: Any) -> tuple[str, ...]:
    """The fault kinds of `required_kinds` the profile has no method for."""
    faults = _profile_faults(profile)
    return tuple(k for k in required_kinds if not faults.can_inject(FaultKind(k)))


def _fields(kinds: Iterable[str]) -> str:
    names = [
        "faults.recover (or an undo for faults.unhealthy)" if k == "recover" else f"faults.{k}"
        for k in kinds
    ]
    return ", ".join(names)


def missing_faults_reason(required_kinds: Iterable[str], profile: Any) -> str | None:
    """Why a requirement needing `required_kinds` cannot run with `profile`, or None.

    The requirement is then *not run* (never not applicable): injecting a fault is the
    harness's job, not a feature the driver may lack.
    """
    missing = missing_faults(required_kinds, profile)
    if not missing:
        return None
    plural = "methods" if len(missing) > 1 else "method"
    return f"the profile has no fault {plural} for {', '.join(missing)}"


def missing_faults_remedy(required_kinds: Iterable[str], profile: Any) -> str:
    missing = missing_faults(required_kinds, profile)
    source = getattr(profile, "shown_source", None) or "the profile"
    return (
        f"give the profile a fault method for {', '.join(missing)} ({_fields(missing)} in "
        f"{source}; docs/profile.md, Faults)"
    )


def fault_context(
    kind: FaultKind, context: RunContext, k8s: K8sClients, profile: Profile | None = None
) -> FaultContext:
    """The FaultContext of a test's injector for `kind` (the spec's options included)."""
    profile = profile or context.profile
    faults = _profile_faults(profile)
    spec = faults.spec(kind)
    group_version = context.device_taint_rule_api_version()
    return FaultContext(
        kind=kind,
        driver=profile.driver,
        run_id=context.run_id,
        timeout=spec.timeout if spec else context.timeout("default"),
        api_client=k8s.api_client,
        kubeconfig=context.cluster.kubeconfig,
        kube_context=context.cluster.context,
        driver_namespace=profile.readiness.daemonset_namespace,
        driver_daemonset=profile.readiness.daemonset_name,
        taint_rule_version=group_version.split("/", 1)[1] if group_version else None,
        options=spec.options if spec else FrozenMap(),
    )


class ProfileFaults:
    """The injectors one test made, per the profile; `restore_all()` undoes every one."""

    def __init__(self, context: RunContext, k8s: K8sClients) -> None:
        self.context = context
        self.k8s = k8s
        self.made: list[FaultInjector] = []

    def new(self, kind: FaultKind) -> FaultInjector:
        """A fresh injector for `kind`, restorable on its own; FaultError if it cannot be made."""
        profile = self.context.profile
        try:
            injector = injector_for(
                kind, _profile_faults(profile), fault_context(kind, self.context, self.k8s)
            )
        except FaultNotSupported as exc:
            # Requirements gate on their fault kinds, so this is a scenario/catalog mismatch.
            raise FaultError(
                f"{exc}; {missing_faults_remedy([kind.value], profile)} and declare "
                f"gates.faults: [{kind.value}] for the requirement"
            ) from None
        if not isinstance(injector, InjectorBase):  # InjectorBase makes its own steps
            from conformance.faults.steps import StepInjector

            injector = StepInjector(injector)  # type: ignore[assignment]
        self.made.append(injector)
        return injector

    def restore_all(self) -> list[str]:
        errors = []
        for injector in reversed(self.made):
            try:
                injector.restore()
            except Exception as exc:  # noqa: BLE001 - restore the others, then report
                errors.append(f"{type(injector).__name__}: {type(exc).__name__}: {exc}")
        self.made.clear()
        return errors


@dataclass
class FaultSweep:
    """What sweeping a run's faults undid (per injector) and what it could not."""

    removed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _distinct_specs(faults: FaultsConfig) -> list[FaultSpec]:
    """One spec per injector (kinds sharing a method and entry point share their records)."""
    seen: dict[tuple[Any, ...], FaultSpec] = {}
    for spec in faults.specs.values():
        options = json.dumps(dict(spec.options), sort_keys=True, default=str)
        key = (spec.method, spec.entry_point, spec.command, options)
        seen.setdefault(key, spec)
    return list(seen.values())


def _over_injectors(
    profile: Profile,
    run_id: str,
    api_client: Any,
    act: Callable[[Any, str], list[str]],
    *,
    kubeconfig: str | None = None,
    kube_context: str | None = None,
    taint_rule_version: str | None = None,
) -> tuple[list[str], list[str]]:
    """`act(injector, where)` on one injector per configured method: what it returned, and
    the error of each method it could not be done for."""
    done: list[str] = []
    errors: list[str] = []
    for spec in _distinct_specs(_profile_faults(profile)):
        context = FaultContext(
            kind=spec.kind,
            driver=profile.driver,
            run_id=run_id,
            timeout=spec.timeout,
            api_client=api_client,
            kubeconfig=kubeconfig,
            kube_context=kube_context,
            driver_namespace=profile.readiness.daemonset_namespace,
            driver_daemonset=profile.readiness.daemonset_name,
            taint_rule_version=taint_rule_version,
            options=spec.options,
        )
        where = f"faults.{spec.kind.value} (method {spec.method})"
        try:
            done += act(INJECTOR_FACTORIES[spec.method](spec, context), where)
        except FaultNotSupported:
            continue  # e.g. no DeviceTaintRule API: nothing of that method can be left
        except Exception as exc:  # noqa: BLE001 - the other methods, then report
            errors.append(f"{where}: {type(exc).__name__}: {exc}")
    return done, errors


def sweep_faults(profile: Profile, run_id: str, api_client: Any, **context: Any) -> FaultSweep:
    """Call `sweep(run_id)` on one injector per configured method that implements it."""

    def sweep(injector: Any, where: str) -> list[str]:
        if not isinstance(injector, SweepingInjector):
            return []
        return [f"{d} ({where})" for d in injector.sweep(run_id)]

    return FaultSweep(*_over_injectors(profile, run_id, api_client, sweep, **context))


def recorded_fault_runs(
    profile: Profile, api_client: Any, **context: Any
) -> tuple[dict[str, int], list[str]]:
    """(run id -> how many of its faults are in effect, errors), from every configured method
    whose injector records them (`recorded_faults`)."""

    def runs(injector: Any, where: str) -> list[str]:
        if not isinstance(injector, RecordingInjector):
            return []
        return list(injector.recorded_faults().values())

    found, errors = _over_injectors(profile, "", api_client, runs, **context)
    counts: dict[str, int] = {}
    for run in found:
        counts[run] = counts.get(run, 0) + 1
    return counts, errors


def fault_sweeper(
    profile: Profile, api_client: Any, **context: Any
) -> Callable[[str], tuple[list[str], list[str]]]:
    """`sweep_faults` for kube.cleanup.sweep_run: run id -> (faults undone, errors)."""

    def sweep(run_id: str) -> tuple[list[str], list[str]]:
        result = sweep_faults(profile, run_id, api_client, **context)
        return result.removed, result.errors

    return sweep
