"""The `command` method: argv templates run on the harness host, with an undo per fault.

Each injection runs `faults.<kind>.command` with the fault's values filled into its
{placeholders} and exported as DRA_* environment variables; its `undo` is recorded *before*
the command runs, so a fault that failed half way is still undone by `restore()`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from conformance.faults.interface import (
    DeviceRef,
    FaultCommandError,
    FaultContext,
    FaultKind,
    FaultNotSupported,
    InjectorBase,
)
from conformance.model.fault_config import FaultSpec
from conformance.model.schema import expand_argv

# placeholder -> environment variable
ENV_NAMES: Mapping[str, str] = {
    "kind": "DRA_FAULT_KIND",
    "driver": "DRA_DRIVER",
    "node": "DRA_NODE",
    "pool": "DRA_POOL",
    "device": "DRA_DEVICE",
    "message": "DRA_FAULT_MESSAGE",
    "count": "DRA_FAIL_COUNT",
    "seconds": "DRA_DELAY_SECONDS",
    "key": "DRA_TAINT_KEY",
    "value": "DRA_TAINT_VALUE",
    "effect": "DRA_TAINT_EFFECT",
    "kubeconfig": "DRA_KUBECONFIG",
}
_STDERR_SHOWN = 300


@dataclass(frozen=True)
class Invocation:
    """One fault: its values, and the device it is about (None for node-wide faults)."""

    values: Mapping[str, str]
    device: DeviceRef | None
    taint_key: str | None = None


# (kind, argv, environment, timeout) -> None; raises FaultCommandError
Runner = Callable[[str, list[str], Mapping[str, str], float], None]


def run_on_host(kind: str, argv: list[str], env: Mapping[str, str], timeout: float) -> None:
    try:
        done = subprocess.run(
            argv,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise FaultCommandError(kind, argv, f"was not found: no executable {argv[0]!r}") from None
    except PermissionError:
        raise FaultCommandError(kind, argv, f"cannot run {argv[0]!r}: permission denied") from None
    except subprocess.TimeoutExpired:
        raise FaultCommandError(kind, argv, f"timed out after {timeout:g}s") from None
    if done.returncode != 0:
        raise FaultCommandError(
            kind, argv, f"failed with exit code {done.returncode}{_last_line(done.stderr)}"
        )


def _last_line(text: str | None) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return f": {lines[-1][:_STDERR_SHOWN]}" if lines else ""


class TemplateInjector(InjectorBase):
    """One fault kind through argv templates; how an argv runs is the subclass's runner."""

    def __init__(self, spec: FaultSpec, context: FaultContext, runner: Runner) -> None:
        self.spec = spec
        self.context = context
        self.kinds = frozenset({spec.kind})
        self._run = runner
        self._undo: list[Invocation] = []

    # -- what the scenario calls --------------------------------------------------------------

    def taint(
        self, device: DeviceRef, key: str, value: str = "", effect: str = "NoSchedule"
    ) -> None:
        self._inject(
            self._taint_kind(), device, {"key": key, "value": value, "effect": effect},
            taint_key=key,
        )  # fmt: skip

    def untaint(self, device: DeviceRef, key: str) -> None:
        self._check(self._taint_kind())
        self._undo_matching(lambda i: i.device == device and i.taint_key == key)

    def _taint_kind(self) -> FaultKind:
        """taint() serves both taint kinds: a driver-taint spec's argv makes the driver do it."""
        driver_taint = self.spec.kind is FaultKind.DRIVER_TAINT
        return FaultKind.DRIVER_TAINT if driver_taint else FaultKind.TAINT

    def mark_unhealthy(
        self, device: DeviceRef, message: str = "injected by dra-conformance"
    ) -> None:
        self._inject(FaultKind.UNHEALTHY, device, {"message": message})

    def recover(self, device: DeviceRef) -> None:
        if self.spec.kind is FaultKind.RECOVER:
            self._inject(FaultKind.RECOVER, device, {})
            return
        # The undo of an unhealthy fault is the device's recovery.
        self._check(FaultKind.UNHEALTHY)
        if not self.spec.undo:
            raise FaultNotSupported(
                f"faults.unhealthy has no undo: configure faults.recover to bring {device.device} "
                "back"
            )
        self._undo_matching(lambda i: i.device == device)

    def withdraw(self, device: DeviceRef) -> None:
        self._inject(FaultKind.WITHDRAW, device, {})

    def fail_prepare(
        self, node: str, device: DeviceRef | None = None, count: int | None = None
    ) -> None:
        values = {"node": node, "count": "" if count is None else str(count)}
        self._inject(FaultKind.FAIL_PREPARE, device, values)

    def delay_prepare(self, node: str, seconds: float) -> None:
        self._inject(FaultKind.DELAY_PREPARE, None, {"node": node, "seconds": f"{seconds:g}"})

    def fail_binding(self, device: DeviceRef, count: int | None = 1) -> None:
        values = {"count": "" if count is None else str(count)}
        self._inject(FaultKind.FAIL_BINDING, device, values)

    def restore(self) -> None:
        """Run every pending undo, newest first; the first failure is raised after all ran."""
        self._undo_matching(lambda _: True)

    # -- mechanics ------------------------------------------------------------------------------

    def _check(self, kind: FaultKind) -> None:
        if kind is not self.spec.kind:
            raise self._unsupported(kind)

    def _values(self, kind: FaultKind, device: DeviceRef | None, extra: Mapping[str, str]) -> dict:
        values = dict.fromkeys(ENV_NAMES, "")
        values.update(kind=kind.value, driver=self.context.driver)
        values["kubeconfig"] = self.context.kubeconfig or ""
        if device is not None:
            values.update(node=device.node_name, pool=device.pool, device=device.device)
        values.update(extra)
        return values

    def environment(self, phase: str, values: Mapping[str, str]) -> dict[str, str]:
        env = {ENV_NAMES[k]: v for k, v in values.items()}
        env["DRA_FAULT_PHASE"] = phase
        env["DRA_RUN_ID"] = self.context.run_id
        env["DRA_KUBE_CONTEXT"] = self.context.kube_context or ""
        return env

    def _inject(
        self,
        kind: FaultKind,
        device: DeviceRef | None,
        extra: Mapping[str, str],
        taint_key: str | None = None,
    ) -> None:
        self._check(kind)
        values = self._values(kind, device, extra)
        if self.spec.undo:
            self._undo.append(Invocation(values, device, taint_key))
        self._invoke("inject", self.spec.command, values)

    def _invoke(self, phase: str, argv: tuple[str, ...], values: Mapping[str, str]) -> None:
        label = self.spec.kind.value if phase == "inject" else f"{self.spec.kind.value} (undo)"
        self._run(
            label, expand_argv(argv, values), self.environment(phase, values), self.spec.timeout
        )

    def _undo_matching(self, wanted: Callable[[Invocation], bool]) -> None:
        errors: list[FaultCommandError] = []
        for invocation in reversed([i for i in self._undo if wanted(i)]):
            self._undo.remove(invocation)
            try:
                self._invoke("undo", self.spec.undo, invocation.values)
            except FaultCommandError as exc:
                errors.append(exc)
        if errors:
            raise errors[0]


class CommandInjector(TemplateInjector):
    """Fault commands run on the harness host (`faults.<kind>.method: command`)."""

    def __init__(self, spec: FaultSpec, context: FaultContext) -> None:
        super().__init__(spec, context, run_on_host)
