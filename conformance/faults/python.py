"""The `python` method: a vendor's own injector class, named by `module:Class` or by the name
of an entry point in group `dra_conformance.faults` of an installed package.

The class is called with a `FaultContext` and must return an object implementing
`FaultInjector` (subclassing `InjectorBase` is the easy way).
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Any

from conformance.faults.interface import FaultContext, FaultError, FaultInjector
from conformance.model.fault_config import ENTRY_POINT_GROUP, FaultSpec


def load_entry_point(kind: str, entry_point: str) -> Any:
    """The object `entry_point` names; FaultError (one line) when it cannot be loaded."""
    where = f"faults.{kind}.entryPoint {entry_point!r}"
    if ":" in entry_point:
        module_name, _, attribute = entry_point.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise FaultError(f"{where}: cannot import module {module_name!r}: {exc}") from None
        target: Any = module
        for part in attribute.split("."):
            if not hasattr(target, part):
                raise FaultError(f"{where}: module {module_name!r} has no {attribute!r}")
            target = getattr(target, part)
        return target
    found = metadata.entry_points(group=ENTRY_POINT_GROUP, name=entry_point)
    if not found:
        known = sorted(ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP))
        listed = ", ".join(known) if known else "none is installed"
        raise FaultError(
            f"{where}: no entry point of that name in group {ENTRY_POINT_GROUP} ({listed}); "
            'write "module:Class" or install the package that provides it'
        )
    try:
        return next(iter(found)).load()
    except Exception as exc:  # noqa: BLE001 - a vendor's import error, shown in one line
        raise FaultError(f"{where}: loading failed: {type(exc).__name__}: {exc}") from None


def python_injector(spec: FaultSpec, context: FaultContext) -> FaultInjector:
    assert spec.entry_point is not None  # the profile schema requires it
    factory = load_entry_point(spec.kind.value, spec.entry_point)
    if not callable(factory):
        raise FaultError(f"faults.{spec.kind.value}.entryPoint {spec.entry_point!r} is not a class")
    injector = factory(context)
    if not isinstance(injector, FaultInjector):
        raise FaultError(
            f"faults.{spec.kind.value}.entryPoint {spec.entry_point!r} made a "
            f"{type(injector).__name__}, which does not implement conformance.faults.FaultInjector"
        )
    return injector
