"""DRA-LIFE-004's checks over plain slice dicts: generations across observed states, and the
settled state after a restart."""

from __future__ import annotations

from typing import Any

from conformance.model.pool_history import (
    PoolHistory,
    device_names,
    empty_slice_problems,
    settled_problems,
    stale_generation_problems,
)


def sl(
    name: str,
    devices: list[str] | None,
    *,
    generation: int = 1,
    count: int = 1,
    pool: str = "node-a",
    counters: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count}
    }
    if devices is not None:
        spec["devices"] = [{"name": d} for d in devices]
    if counters:
        spec["sharedCounters"] = [{"name": "set-0", "counters": {}}]
    return {"metadata": {"name": name}, "spec": spec}


BEFORE = {("node-a", "gpu-0"), ("node-a", "gpu-1")}


def test_a_pool_kept_or_bumped_is_no_regression():
    history = PoolHistory()
    history.observe([sl("s0", ["gpu-0"], generation=3)])
    history.observe([sl("s0", ["gpu-0"], generation=3)])  # identical slices kept on start
    history.observe([sl("s0", ["gpu-0"], generation=4)])
    assert history.regressions == []
    assert history.highest == {"node-a": 4}


def test_a_lower_generation_while_slices_exist_is_a_regression():
    history = PoolHistory()
    history.observe([sl("s0", ["gpu-0"], generation=3)])
    history.observe([sl("s0", ["gpu-0"], generation=3), sl("s1", ["gpu-1"], generation=3)])
    history.observe([sl("s1", ["gpu-1"], generation=2)], "MODIFIED s1")
    [problem] = history.regressions
    assert "pool node-a: generation went back from 3 to 2 (MODIFIED s1)" in problem
    assert "s1" in problem


def test_the_bar_stays_at_the_highest_generation_seen():
    history = PoolHistory()
    history.observe([sl("s0", ["gpu-0"], generation=5)])
    history.observe([sl("s0", ["gpu-0"], generation=2)])
    history.observe([sl("s0", ["gpu-0"], generation=4)])
    assert len(history.regressions) == 2


def test_a_pool_wiped_whole_may_start_again_lower():
    # The kubelet deletes its node's slices; the driver writes the pool from nothing.
    history = PoolHistory()
    history.observe([sl("s0", ["gpu-0"], generation=7)])
    history.observe([])
    history.observe([sl("s0", ["gpu-0"], generation=1)])
    assert history.regressions == []


def test_pools_are_followed_apart():
    history = PoolHistory()
    history.observe([sl("a", ["x"], generation=5), sl("b", ["y"], generation=1, pool="other")])
    history.observe([sl("a", ["x"], generation=5), sl("b", ["y"], generation=2, pool="other")])
    assert history.regressions == []


def test_a_slice_left_at_a_lower_generation_is_stale():
    slices = [
        sl("new-0", ["gpu-0", "gpu-1"], generation=4),
        sl("old-counters", None, generation=3, counters=True),
    ]
    [problem] = stale_generation_problems(slices)
    assert "slice(s) left from a lower generation: old-counters (generation 3)" in problem
    assert stale_generation_problems(slices[:1]) == []


def test_an_empty_slice_is_a_problem_only_in_a_pool_with_devices():
    with_devices = [sl("s0", ["gpu-0"], count=2), sl("s1", [], count=2)]
    [problem] = empty_slice_problems(with_devices)
    assert "zero devices and no shared counters: s1" in problem
    assert empty_slice_problems([sl("s0", [])]) == []  # an empty pool, published as such
    assert empty_slice_problems([sl("s0", ["gpu-0"], count=2), sl("c", None, count=2,
                                counters=True)]) == []  # fmt: skip


def test_the_settled_state_of_a_correct_driver_has_no_problems():
    slices = [sl("s0", ["gpu-0"], generation=2, count=2), sl("s1", ["gpu-1"], generation=2,
              count=2)]  # fmt: skip
    assert device_names(slices) == BEFORE
    assert not any(settled_problems(slices, BEFORE).values())


def test_the_settled_state_names_every_broken_check():
    slices = [
        sl("s0", ["gpu-0", "gpu-2"], generation=2, count=3),
        sl("s1", ["gpu-0"], generation=2, count=3),
        sl("s2", [], generation=2, count=3),
        sl("old", ["gpu-1"], generation=1, count=1),
    ]
    problems = settled_problems(slices, BEFORE)
    assert problems["pools"] == []  # three slices at generation 2, as counted
    assert problems["stale"] and problems["duplicates"] and problems["empty"]
    assert problems["devices"] == [
        "node-a/gpu-1: no longer published",
        "node-a/gpu-2: newly published",
    ]
    incomplete = settled_problems([sl("s0", ["gpu-0", "gpu-1"], generation=2, count=2)], BEFORE)
    assert "resourceSliceCount is 2, but 1 slice(s)" in incomplete["pools"][0]
    assert settled_problems([], BEFORE) == {
        "slices": ["no ResourceSlice of the driver on the node"]
    }
