"""What DRA-LIFE-004 demands of a node's pools across driver restarts, as pure checks over
ResourceSlice API dicts.

Two parts. `PoolHistory` follows the slices as they change (every state a watch shows) and
remembers each pool's highest spec.pool.generation: a pool's generation must never go back
while any slice of it exists. The ResourceSlice controller of k8s.io/dynamic-resource-allocation
starts from the highest generation it finds, may keep identical slices untouched (the same
generation) and bumps it for a change; consumers read only a pool's highest generation, so a
lower one would let stale slices win. Once every slice of a pool is gone (the kubelet deletes
its node's slices when it restarts or a plugin stays away) nothing is left to go back from,
and the pool may start again at any generation.

`settled_problems` judges the state once the driver is ready again: the slices of a pool's
highest generation number exactly resourceSliceCount (DRA-CORE-002's checks), none is left
from a lower generation, no slice is empty in a pool that has devices, and the device names
are those of before the restarts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.model.slice_checks import (
    duplicate_device_problems,
    newest_generation,
    pool_count_problems,
)


def _name(slice_: Mapping[str, Any]) -> str:
    return (slice_.get("metadata") or {}).get("name", "?")


def _pool(slice_: Mapping[str, Any]) -> str:
    return slice_["spec"]["pool"]["name"]


def _generation(slice_: Mapping[str, Any]) -> int:
    return int(slice_["spec"]["pool"].get("generation", 0))


def _by_pool(slices: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    pools: dict[str, list[Mapping[str, Any]]] = {}
    for s in slices:
        pools.setdefault(_pool(s), []).append(s)
    return pools


def pool_generations(slices: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Each pool's generation: the highest spec.pool.generation of its slices."""
    return {
        pool: max(_generation(s) for s in members) for pool, members in _by_pool(slices).items()
    }


def device_names(slices: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """(pool, device) of every device at its pool's highest generation."""
    return {
        (pool, d["name"])
        for pool, members in _by_pool(slices).items()
        for s in newest_generation(members)
        for d in s["spec"].get("devices") or ()
        if "name" in d
    }


@dataclass
class PoolHistory:
    """The generations of a node's pools over a sequence of observed states."""

    highest: dict[str, int] = field(default_factory=dict)  # pools with slices now
    regressions: list[str] = field(default_factory=list)
    states: int = 0

    def observe(self, slices: Sequence[Mapping[str, Any]], what: str = "") -> None:
        """One state of the slices (all of the node's slices of the driver); `what` names
        the change that led to it, for the problem text."""
        self.states += 1
        now = pool_generations(slices)
        for pool, generation in sorted(now.items()):
            before = self.highest.get(pool)
            if before is not None and generation < before:
                names = ", ".join(sorted(_name(s) for s in slices if _pool(s) == pool))
                self.regressions.append(
                    f"pool {pool}: generation went back from {before} to {generation}"
                    + (f" ({what})" if what else "")
                    + f", its slices then: {names}"
                )
            # The highest ever seen stays the bar while the pool has slices.
            self.highest[pool] = max(generation, before or generation)
        for pool in set(self.highest) - set(now):
            del self.highest[pool]  # every slice gone: the pool may start again anywhere


def stale_generation_problems(slices: Iterable[Mapping[str, Any]]) -> list[str]:
    """Slices left at a lower generation than their pool's (pending: a driver writes the new
    generation, then deletes the old slices)."""
    problems = []
    for pool, members in sorted(_by_pool(slices).items()):
        top = max(_generation(s) for s in members)
        stale = sorted(f"{_name(s)} (generation {_generation(s)})" for s in members
                       if _generation(s) < top)  # fmt: skip
        if stale:
            problems.append(
                f"pool {pool} generation {top}: slice(s) left from a lower generation: "
                + ", ".join(stale)
            )
    return problems


def empty_slice_problems(slices: Iterable[Mapping[str, Any]]) -> list[str]:
    """In a pool with devices, no slice of its generation carries neither devices nor shared
    counters (the API allows an empty slice; the upstream controller writes one only for a pool
    without devices, to show the driver is there)."""
    problems = []
    for pool, members in sorted(_by_pool(slices).items()):
        current = newest_generation(members)
        if not any(s["spec"].get("devices") for s in current):
            continue  # an empty pool: one empty slice is how it is published
        empty = sorted(
            _name(s)
            for s in current
            if not s["spec"].get("devices") and not s["spec"].get("sharedCounters")
        )
        if empty:
            problems.append(
                f"pool {pool} generation {_generation(current[0])}: slice(s) published with "
                f"zero devices and no shared counters: {', '.join(empty)}"
            )
    return problems


def device_name_problems(
    before: set[tuple[str, str]], slices: Iterable[Mapping[str, Any]]
) -> list[str]:
    now = device_names(slices)
    return [f"{p}/{d}: no longer published" for p, d in sorted(before - now)] + [
        f"{p}/{d}: newly published" for p, d in sorted(now - before)
    ]


def settled_problems(
    slices: Sequence[Mapping[str, Any]], before: set[tuple[str, str]]
) -> dict[str, list[str]]:
    """Every check of the settled state by name, empty lists when it conforms."""
    if not slices:
        return {"slices": ["no ResourceSlice of the driver on the node"]}
    return {
        "pools": pool_count_problems(slices),
        "stale": stale_generation_problems(slices),
        "duplicates": duplicate_device_problems(slices),
        "empty": empty_slice_problems(slices),
        "devices": device_name_problems(before, slices),
    }
