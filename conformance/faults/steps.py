"""Every fault an injector makes or undoes is an Allure step named after the fault and the
device ("inject fault unhealthy on device gpu.example.com/worker-1/gpu-0"), whichever injector
makes it: `InjectorBase` subclasses get it by `wrap_operations` (interface.py), any other
`FaultInjector` (a vendor's class that implements the protocol alone) by `StepInjector`
(registry.py). A failing operation marks its step failed and still raises."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from conformance.observe.steps import step

WRAPPED = "_dra_fault_step"


def _device(device: Any) -> str:
    if device is None:
        return ""
    node = f" (node {device.node})" if getattr(device, "node", None) else ""
    return f"device {device.driver}/{device.pool}/{device.device}{node}"


def _taint(a: Mapping[str, Any]) -> str:
    value = f"={a['value']}" if a.get("value") else ""
    effect = a.get("effect") or "NoSchedule"
    return f"inject fault taint {a['key']}{value}:{effect} on {_device(a['device'])}"


def _fail_prepare(a: Mapping[str, Any]) -> str:
    device = f" for {_device(a['device'])}" if a.get("device") is not None else ""
    count = f" ({a['count']} time(s))" if a.get("count") is not None else ""
    return f"inject fault fail-prepare on node {a['node']}{device}{count}"


def _fail_binding(a: Mapping[str, Any]) -> str:
    count = f" ({a['count']} allocation(s))" if a.get("count") is not None else ""
    return f"inject fault fail-binding on {_device(a['device'])}{count}"


TITLES: Mapping[str, Callable[[Mapping[str, Any]], str]] = {
    "taint": _taint,
    "untaint": lambda a: f"clear fault taint {a['key']} on {_device(a['device'])}",
    "mark_unhealthy": lambda a: f"inject fault unhealthy on {_device(a['device'])}",
    "recover": lambda a: f"clear fault unhealthy on {_device(a['device'])} (recover)",
    "withdraw": lambda a: f"inject fault withdraw on {_device(a['device'])}",
    "fail_prepare": _fail_prepare,
    "delay_prepare": lambda a: f"inject fault delay-prepare ({a['seconds']}s) on node {a['node']}",
    "fail_binding": _fail_binding,
    "restore": lambda a: "clear every fault this injector made",
}


def title_of(operation: str, function: Callable[..., Any], args: tuple, kwargs: dict) -> str:
    """The step title of `operation` called with (self, *args, **kwargs)."""
    try:
        bound = inspect.signature(function).bind(None, *args, **kwargs)
        bound.apply_defaults()
        return TITLES[operation](bound.arguments)
    except (TypeError, KeyError, AttributeError):
        return f"fault injector: {operation}"


def stepped(operation: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` (an injector method) run inside the step of `operation`."""
    if getattr(function, WRAPPED, False):
        return function

    @functools.wraps(function)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        title = title_of(operation, function, args, kwargs)
        if getattr(self, "plural", None) == "devicetaintrules":  # say how the taint is made
            title += " (DeviceTaintRule)"
        with step(title):
            return function(self, *args, **kwargs)

    setattr(run, WRAPPED, True)
    return run


def wrap_operations(cls: type) -> None:
    """Wrap the operations `cls` itself defines (inherited ones are wrapped already)."""
    for operation in TITLES:
        function = cls.__dict__.get(operation)
        if inspect.isfunction(function):
            setattr(cls, operation, stepped(operation, function))


class StepInjector:
    """A `FaultInjector` that is not an `InjectorBase`, its operations run as steps."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def prepare_failure_text(self) -> str | None:
        return getattr(self.inner, "prepare_failure_text", None)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if name in TITLES and callable(attribute):
            function = getattr(type(self.inner), name, None)

            def run(*args: Any, **kwargs: Any) -> Any:
                title = (
                    title_of(name, function, args, kwargs)
                    if inspect.isfunction(function)
                    else f"fault injector: {name}"
                )
                with step(title):
                    return attribute(*args, **kwargs)

            return run
        return attribute

    def supports(self, kind: Any) -> bool:
        return self.inner.supports(kind)

    def __enter__(self) -> StepInjector:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.restore()
