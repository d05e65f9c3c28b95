"""Before a scenario test runs: not applicable (the driver or cluster lacks what it needs)
or not run (the harness cannot run it here), each with its reason."""

from __future__ import annotations

import time

import pytest

from conformance.faults import missing_faults_reason, missing_faults_remedy
from conformance.model.outcome import not_applicable, not_run
from conformance.model.profile import (
    BINDING_KIND,
    CONSUMABLE_KIND,
    SELECTOR_ALIASES,
    Profile,
)
from conformance.model.requirements import (
    Requirement,
    missing_capabilities_reason,
    not_applicable_reason,
    not_run_reason,
    without_capabilities,
)
from conformance.plugin.collection import item_view
from conformance.plugin.markers import (
    parse_capabilities,
    parse_devices,
    parse_node_exclusive,
)
from conformance.plugin.not_ready import (
    driver_not_ready_reason,
    fails_on_readiness,
    run_without_driver,
)
from conformance.plugin.state import (
    REQUIREMENT_KEY,
    STARTED_KEY,
    get_run_context,
)
from conformance.report.outcomes import mark_probe
from conformance.run.context import RunContext


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    req = item.stash.get(REQUIREMENT_KEY, None)
    context = get_run_context(item.config)
    if req is None or context is None:
        return
    item.stash[STARTED_KEY] = time.time()
    # What the driver or cluster lacks decides first: such a requirement would not apply even
    # where it could run.
    lacking = not_applicable_reason(req, context)
    capabilities = parse_capabilities(item_view(item))[0]
    undeclared = missing_capabilities_reason(capabilities, context)
    probed = sorted({*req.capabilities, *capabilities} - context.capabilities)
    if (
        probed
        and item.config.getoption("dra_probe_capabilities", False)
        and without_capabilities(lacking) is None
    ):
        # Only undeclared capabilities keep it from applying: run it to see what the driver
        # does, outside the verdict.
        mark_probe(item, tuple(probed))
        lacking = undeclared = None
    reasons = [r for r in (lacking, undeclared) if r]
    if reasons:
        not_applicable("; ".join(reasons))
    failure = context.readiness_failure
    if failure is not None and not fails_on_readiness(req, failure):
        not_run(*driver_not_ready_reason(failure))
    if failure is None and (no_shareable := no_shareable_devices_reason(item, context)):
        not_applicable(no_shareable)
    if failure is None and (no_waiting := no_binding_devices_reason(item, context)):
        not_applicable(no_waiting)
    # Then what keeps it from running here; each reason with what would make it run.
    cannot_run = [
        not_run_reason(req, context),
        missing_selector_reason(item, context.profile),
        missing_consumable_reason(item, context.profile),
        missing_binding_reason(item, context.profile),
        missing_faults(req, context.profile),
    ]
    found = [r for r in cannot_run if r]
    if found:
        not_run("; ".join(r for r, _ in found), "; ".join(m for _, m in found if m))


def missing_faults(req: Requirement, profile: Profile) -> tuple[str, str] | None:
    """Fault kinds the requirement injects and the profile cannot: injecting a fault is the
    harness's job, never a driver feature, so the requirement is not run (never N/A)."""
    reason = missing_faults_reason(req.faults, profile)
    return (reason, missing_faults_remedy(req.faults, profile)) if reason else None


def missing_selector_reason(item: pytest.Item, profile: Profile) -> tuple[str, str] | None:
    """A test that leases `selector:kind-a|b` cannot run on a profile with fewer selectors
    (a driver whose devices carry no attributes to tell kinds apart): not run, with the fix."""
    needs, _, _ = parse_devices(item_view(item), profile.device_kinds)
    for need in needs:
        if need.kind in SELECTOR_ALIASES and profile.aliased_selector(need.kind) is None:
            return (
                f"the test needs device kind {need.kind} (the profile's selector number "
                f"{SELECTOR_ALIASES.index(need.kind) + 1}), and the profile defines "
                f"{len(profile.selectors)} selector(s)",
                "give the profile two disjoint selectors (docs/profile.md, selectors)",
            )
    return None


def _leases(item: pytest.Item, profile: Profile, kind: str) -> bool:
    view = item_view(item)
    needs, _, _ = parse_devices(view, profile.device_kinds)
    whole_node, _ = parse_node_exclusive(view, profile.device_kinds)
    kinds = {n.kind for n in needs} | ({whole_node.kind} if whole_node else set())
    return kind in kinds


def _leases_consumable(item: pytest.Item, profile: Profile) -> bool:
    return _leases(item, profile, CONSUMABLE_KIND)


def missing_consumable_reason(item: pytest.Item, profile: Profile) -> tuple[str, str] | None:
    """A test of shareable devices needs the profile to name their class: not run, with the
    fix (the driver may well have them)."""
    if profile.consumable_capacity is None and _leases_consumable(item, profile):
        return (
            f"the test needs device kind {CONSUMABLE_KIND} and the profile names no class of "
            "shareable devices (profile field consumableCapacity)",
            "set consumableCapacity.class to the DeviceClass of the driver's devices with "
            "allowMultipleAllocations (docs/profile.md)",
        )
    return None


def no_shareable_devices_reason(item: pytest.Item, context: RunContext) -> str | None:
    """Not applicable: the profile names the class, but no node publishes a device of it with
    allowMultipleAllocations: true, so there is nothing to share."""
    section = context.profile.consumable_capacity
    if section is None or not _leases_consumable(item, context.profile):
        return None
    if context.device_sets.get(CONSUMABLE_KIND):
        return None
    return (
        f"no node publishes a device of DeviceClass {section.device_class} with "
        "allowMultipleAllocations: true (DRAConsumableCapacity): nothing can be shared"
    )


def missing_binding_reason(item: pytest.Item, profile: Profile) -> tuple[str, str] | None:
    """A test of binding conditions needs the profile to name their devices' class: not run,
    with the fix (the profile loader demands it with the capability)."""
    if profile.binding_conditions is None and _leases(item, profile, BINDING_KIND):
        return (
            f"the test needs device kind {BINDING_KIND} and the profile names no class of "
            "devices with bindingConditions (profile field bindingConditions)",
            "set bindingConditions.class to the DeviceClass of the driver's devices published "
            "with bindingConditions (docs/profile.md)",
        )
    return None


def no_binding_devices_reason(item: pytest.Item, context: RunContext) -> str | None:
    """Not applicable: the profile names the class, but no node publishes a device of it with
    bindingConditions (or the API server dropped them: DRADeviceBindingConditions off)."""
    section = context.profile.binding_conditions
    if section is None or not _leases(item, context.profile, BINDING_KIND):
        return None
    if context.device_sets.get(BINDING_KIND):
        return None
    return (
        f"no node publishes a device of DeviceClass {section.device_class} with "
        "bindingConditions (DRADeviceBindingConditions): no allocation waits for the driver"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """A driver that never became ready: report every scenario test without running it."""
    context = get_run_context(item.config)
    req = item.stash.get(REQUIREMENT_KEY, None)
    if context is None or context.readiness_failure is None or req is None:
        return None
    run_without_driver(item, nextitem, req, context.readiness_failure)
    return True


# --- fixtures ---------------------------------------------------------------------------------
