"""What DRA-CORE-002 demands of a driver's ResourceSlices, as pure checks over API dicts.

The one source of truth for "is this slice valid for DRA-CORE-002": the scenario and
`profile check` both call `slice_problems`. Each check returns problems (one line each, naming
slice, pool and device), empty when the slices conform.

Problems are of two sorts. *Pending* ones may clear while a driver (re)publishes: a node
without its slices yet, a pool whose newest generation is not complete. *Decided* ones are
in what is already published, so waiting cannot change them: an invalid or ambiguous
attribute or capacity name, a device name twice in one generation of a pool. A scenario waits
for the first and fails at once on the second.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from conformance.model.cel import attribute_name_problem, resolve_name


def _name(slice_: Mapping[str, Any]) -> str:
    return (slice_.get("metadata") or {}).get("name", "?")


def _pools(slices: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    pools: dict[str, list[Mapping[str, Any]]] = {}
    for s in slices:
        pools.setdefault(s["spec"]["pool"]["name"], []).append(s)
    return pools


def newest_generation(pool_slices: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    newest = max(int(s["spec"]["pool"].get("generation", 0)) for s in pool_slices)
    return [s for s in pool_slices if int(s["spec"]["pool"].get("generation", 0)) == newest]


def pool_count_problems(slices: Iterable[Mapping[str, Any]]) -> list[str]:
    """Per pool, at its highest generation: exactly resourceSliceCount slices, all agreeing
    on the count (pending: a republishing driver writes one slice at a time)."""
    problems = []
    for pool, members in sorted(_pools(slices).items()):
        current = newest_generation(members)
        generation = current[0]["spec"]["pool"].get("generation", 0)
        counts = {int(s["spec"]["pool"].get("resourceSliceCount", 0)) for s in current}
        names = ", ".join(sorted(_name(s) for s in current))
        if len(counts) != 1:
            problems.append(
                f"pool {pool} generation {generation}: its slices disagree on "
                f"resourceSliceCount ({sorted(counts)}): {names}"
            )
        elif counts != {len(current)}:
            problems.append(
                f"pool {pool} generation {generation}: resourceSliceCount is {counts.pop()}, "
                f"but {len(current)} slice(s) carry that generation: {names}"
            )
    return problems


def duplicate_device_problems(slices: Iterable[Mapping[str, Any]]) -> list[str]:
    """Device names unique across the slices of a pool's highest generation (decided: a
    driver must bump the generation to change a pool, so one generation never heals)."""
    problems = []
    for pool, members in sorted(_pools(slices).items()):
        current = newest_generation(members)
        generation = current[0]["spec"]["pool"].get("generation", 0)
        devices = Counter(
            d["name"] for s in current for d in (s["spec"].get("devices") or ()) if "name" in d
        )
        duplicates = sorted(n for n, c in devices.items() if c > 1)
        if duplicates:
            problems.append(
                f"pool {pool} generation {generation}: device name(s) published more than once: "
                + ", ".join(f"{n} ({devices[n]}x)" for n in duplicates)
            )
    return problems


def name_problems(slices: Iterable[Mapping[str, Any]], driver: str) -> list[str]:
    """Every attribute and capacity name of every device (of each pool's highest generation,
    the only one consumers read) is a valid resource.k8s.io/v1 QualifiedName: `<name>` (in
    the driver's domain) or `<domain>/<name>`; and no two of a device's names mean the same
    once unqualified ones are resolved (`model` and `<driver>/model`: CEL sees only one)."""
    problems = []
    current = [s for members in _pools(slices).values() for s in newest_generation(members)]
    for s in sorted(current, key=_name):
        where = f"slice {_name(s)} pool {s['spec']['pool']['name']} device "
        for device in s["spec"].get("devices") or ():
            for field in ("attributes", "capacity"):
                names = sorted(device.get(field) or {})
                invalid = [f"{n} ({why})" for n in names if (why := attribute_name_problem(n))]
                if invalid:
                    problems.append(
                        f"{where}{device.get('name')}: invalid {field} name(s): "
                        + "; ".join(invalid)
                    )
                resolved = Counter(resolve_name(n, driver) for n in names)
                twins = [n for n in names if resolved[resolve_name(n, driver)] > 1]
                if twins:
                    problems.append(
                        f"{where}{device.get('name')}: {field} given twice, unqualified and "
                        f"qualified with the driver's domain {driver}: {', '.join(twins)}"
                    )
    return problems


def node_coverage_problems(
    slices: Iterable[Mapping[str, Any]], nodes: Iterable[str], minimum: int
) -> list[str]:
    """Every node has at least `minimum` of the driver's slices with spec.nodeName = node."""
    per_node = Counter((s.get("spec") or {}).get("nodeName") for s in slices)
    return [
        f"node {n}: {per_node.get(n, 0)} ResourceSlice(s) with spec.nodeName={n}, "
        f"expected at least {minimum}"
        for n in sorted(nodes)
        if per_node.get(n, 0) < minimum
    ]


def driver_problems(slices: Iterable[Mapping[str, Any]], driver: str) -> list[str]:
    return [
        f"slice {_name(s)}: spec.driver is {s['spec'].get('driver')!r}, not {driver!r}"
        for s in slices
        if s["spec"].get("driver") != driver
    ]


def decided_slice_problems(slices: Sequence[Mapping[str, Any]], driver: str) -> list[str]:
    """The problems of what is already published, which waiting cannot change."""
    return [*duplicate_device_problems(slices), *name_problems(slices, driver)]


def slice_problems_by_check(
    slices: Sequence[Mapping[str, Any]], driver: str, nodes: Iterable[str], minimum: int
) -> dict[str, list[str]]:
    """Every DRA-CORE-002 check by name; `slices` are the ones listed with spec.driver=driver.
    `nodes`, `pools` and `slices` are pending problems, `devices` and `names` decided ones."""
    if not slices:
        return {"slices": [f"no ResourceSlice with spec.driver={driver}"]}
    return {
        "slices": driver_problems(slices, driver),
        "nodes": node_coverage_problems(slices, nodes, minimum),
        "pools": pool_count_problems(slices),
        "devices": duplicate_device_problems(slices),
        "names": name_problems(slices, driver),
    }


def slice_problems(
    slices: Sequence[Mapping[str, Any]], driver: str, nodes: Iterable[str], minimum: int
) -> list[str]:
    """Everything DRA-CORE-002 checks, in one list."""
    return [
        p
        for found in slice_problems_by_check(slices, driver, nodes, minimum).values()
        for p in found
    ]
