"""Which published devices a profile's selectors select, evaluated as the scheduler does: the
devices of each device kind, and the devices a list of selectors selects or on which it errs.
Above conformance.model (the devices and the profile are its pure data), beside the evaluator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from conformance.cel.evaluator import CelEvaluator, MatchResult, cel_evaluator
from conformance.model.devices import PublishedDevice, class_expressions
from conformance.model.partitionable import PARTITIONABLE_KINDS
from conformance.model.profile import BINDING_KIND, CONSUMABLE_KIND, SELECTOR_ALIASES, Profile


def selector_results(
    expressions: Sequence[str],
    devices: Sequence[PublishedDevice],
    driver: str,
    *,
    evaluator: CelEvaluator | None = None,
) -> list[list[MatchResult]]:
    """[expression][device]: each selector evaluated on each device as the scheduler does; an
    evaluation error is a non-match that carries its message."""
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
