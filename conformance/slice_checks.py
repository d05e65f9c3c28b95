"""What DRA-CORE-002 demands of a driver's ResourceSlices, as pure checks over API dicts.

Each check returns problems (one line each, naming slice, pool and device), empty when the
slices conform, so a scenario can both wait for a republishing driver to settle and fail with
every problem listed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from conformance.cel import is_qualified_name


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


def pool_problems(slices: Iterable[Mapping[str, Any]]) -> list[str]:
    """Per pool, at its highest generation: exactly resourceSliceCount slices (all agreeing on
    the count), and device names unique across them."""
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


def qualification_problems(slices: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every attribute and capacity name of every device (of each pool's highest generation,
    the only one consumers read) is `<domain>/<identifier>`."""
    problems = []
    current = [s for members in _pools(slices).values() for s in newest_generation(members)]
    for s in sorted(current, key=_name):
        pool = s["spec"]["pool"]["name"]
        for device in s["spec"].get("devices") or ():
            for field in ("attributes", "capacity"):
                bad = sorted(n for n in device.get(field) or {} if not is_qualified_name(n))
                if bad:
                    problems.append(
                        f"slice {_name(s)} pool {pool} device {device.get('name')}: {field} "
                        f"not fully qualified (<domain>/<name>): {', '.join(bad)}"
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


def slice_problems(
    slices: Sequence[Mapping[str, Any]], driver: str, nodes: Iterable[str], minimum: int
) -> list[str]:
    """Everything DRA-CORE-002 checks; `slices` are the ones listed with spec.driver=driver."""
    if not slices:
        return [f"no ResourceSlice with spec.driver={driver}"]
    return [
        *driver_problems(slices, driver),
        *node_coverage_problems(slices, nodes, minimum),
        *pool_problems(slices),
        *qualification_problems(slices),
    ]
