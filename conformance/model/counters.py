"""Shared counters of partitionable devices (DRAPartitionableDevices), read from ResourceSlices:
the counter sets a pool publishes (spec.sharedCounters[]) and what each device draws on them
(spec.devices[].consumesCounters[]). Pure: DRA-ALLOC-016 cross-checks allocations with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

from kubernetes.utils.quantity import parse_quantity

from conformance.model.devices import latest_slices

CounterKey = tuple[str, str]  # (pool, counter set)


def _values(counters: Mapping[str, Mapping[str, str]] | None) -> dict[str, Decimal]:
    return {name: parse_quantity(c["value"]) for name, c in (counters or {}).items()}


def counter_sets(slices: Iterable[Mapping], driver: str) -> dict[CounterKey, dict[str, Decimal]]:
    """(pool, counter set) -> counter -> value, from the newest slices of `driver`."""
    out: dict[CounterKey, dict[str, Decimal]] = {}
    for s in latest_slices(x for x in slices if x.get("spec", {}).get("driver") == driver):
        pool = s["spec"]["pool"]["name"]
        for cs in s["spec"].get("sharedCounters") or ():
            out[(pool, cs["name"])] = _values(cs.get("counters"))
    return out


def consumption(slices: Iterable[Mapping], driver: str) -> dict[str, dict[CounterKey, dict]]:
    """Device id (`<pool>/<device>`) -> (pool, counter set) -> counter -> what it consumes."""
    out: dict[str, dict[CounterKey, dict]] = {}
    for s in latest_slices(x for x in slices if x.get("spec", {}).get("driver") == driver):
        pool = s["spec"]["pool"]["name"]
        for device in s["spec"].get("devices") or ():
            uses = {
                (pool, c["counterSet"]): _values(c.get("counters"))
                for c in device.get("consumesCounters") or ()
            }
            if uses:
                out[f"{pool}/{device['name']}"] = uses
    return out


def overdrawn(slices: Iterable[Mapping], driver: str, allocated: Iterable[str]) -> list[str]:
    """What the `allocated` device ids together draw beyond a counter set, one line each
    (empty: every set holds out)."""
    slices = list(slices)
    sets, uses = counter_sets(slices, driver), consumption(slices, driver)
    drawn: dict[CounterKey, dict[str, Decimal]] = {}
    for device in set(allocated):
        for key, counters in uses.get(device, {}).items():
            for name, value in counters.items():
                drawn.setdefault(key, {}).setdefault(name, Decimal(0))
                drawn[key][name] += value
    problems = []
    for (pool, name), counters in sorted(drawn.items()):
        have = sets.get((pool, name))
        if have is None:
            problems.append(f"counter set {pool}/{name} is consumed but published by no slice")
            continue
        for counter, value in sorted(counters.items()):
            if value > have.get(counter, Decimal(0)):
                problems.append(
                    f"counter {counter} of set {pool}/{name}: allocated devices draw {value}, "
                    f"the set holds {have.get(counter, Decimal(0))}"
                )
    return problems
