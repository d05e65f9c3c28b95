"""DRA-CORE-002's slice checks over plain slice dicts."""

from __future__ import annotations

from typing import Any

from conformance.model.slice_checks import (
    decided_slice_problems,
    duplicate_device_problems,
    name_problems,
    node_coverage_problems,
    pool_count_problems,
    slice_problems,
    slice_problems_by_check,
)

D = "gpu.example.com"


def sl(
    name: str,
    pool: str,
    devices: list[dict[str, Any]],
    *,
    generation: int = 1,
    count: int = 1,
    node: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": D,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": devices,
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name}, "spec": spec}


def dev(name: str, **attrs: str) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {k: {"string": v} for k, v in attrs.items()},
        "capacity": {f"{D}/memory": {"value": "1Gi"}},
    }


def test_a_good_pool_has_no_problems() -> None:
    slices = [
        sl("a", "w1", [dev("g0", **{f"{D}/model": "m"})], count=2, node="w1"),
        sl("b", "w1", [dev("g1")], count=2, node="w1"),
        sl("old", "w1", [dev("g0")], generation=0, count=5, node="w1"),  # older: ignored
    ]
    assert slice_problems(slices, D, ["w1"], 1) == []


def test_slice_count_must_match_the_newest_generation() -> None:
    slices = [sl("a", "w1", [dev("g0")], count=2)]
    assert pool_count_problems(slices) == [
        "pool w1 generation 1: resourceSliceCount is 2, but 1 slice(s) carry that generation: a"
    ]
    disagree = [sl("a", "w1", [dev("g0")], count=2), sl("b", "w1", [dev("g1")], count=3)]
    assert "disagree on resourceSliceCount ([2, 3])" in pool_count_problems(disagree)[0]


def test_duplicate_device_names_across_slices_of_a_pool() -> None:
    slices = [sl("a", "w1", [dev("g0")], count=2), sl("b", "w1", [dev("g0")], count=2)]
    assert duplicate_device_problems(slices) == [
        "pool w1 generation 1: device name(s) published more than once: g0 (2x)"
    ]
    # The same name in two pools is fine.
    assert duplicate_device_problems([sl("a", "w1", [dev("g0")]), sl("b", "w2", [dev("g0")])]) == []


def test_unqualified_attribute_and_capacity_names_are_valid() -> None:
    # resource.k8s.io/v1 takes an unqualified name to be in the driver's domain.
    device = dev("g0", model="m")
    device["capacity"] = {"memory": {"value": "1Gi"}}
    assert slice_problems([sl("a", "w1", [device], node="w1")], D, ["w1"], 1) == []


def test_names_the_api_server_lets_through_but_no_consumer_can_name() -> None:
    device = dev("g0", **{f"{D}/numa/node": "0", "model": "m", f"{D}/model": "m"})
    device["capacity"] = {"Bad_Domain/memory": {"value": "1Gi"}}
    assert name_problems([sl("a", "w1", [device])], D) == [
        f"slice a pool w1 device g0: invalid attributes name(s): {D}/numa/node (more than one "
        "'/' (the form is <domain>/<name> or <name>))",
        f"slice a pool w1 device g0: attributes given twice, unqualified and qualified with "
        f"the driver's domain {D}: {D}/model, model",
        "slice a pool w1 device g0: invalid capacity name(s): Bad_Domain/memory (domain "
        "'Bad_Domain' is not a DNS subdomain of at most 63 characters)",
    ]


def test_decided_problems_are_the_published_content_not_what_may_settle() -> None:
    bad = dev("g0", **{f"{D}/a/b": "x"})
    incomplete = [sl("a", "w1", [bad, dev("g0")], count=2, node="w1")]
    assert [p.split(":")[1].strip() for p in decided_slice_problems(incomplete, D)] == [
        "device name(s) published more than once",
        "invalid attributes name(s)",
    ]
    found = slice_problems_by_check(incomplete, D, ["w1", "w2"], 1)
    assert found["nodes"] == [
        "node w2: 0 ResourceSlice(s) with spec.nodeName=w2, expected at least 1"
    ]
    assert found["pools"] == [
        "pool w1 generation 1: resourceSliceCount is 2, but 1 slice(s) carry that generation: a"
    ]
    assert found["devices"] + found["names"] == decided_slice_problems(incomplete, D)


def test_every_node_needs_its_slices() -> None:
    slices = [sl("a", "w1", [dev("g0")], node="w1")]
    assert node_coverage_problems(slices, ["w1", "w2"], 1) == [
        "node w2: 0 ResourceSlice(s) with spec.nodeName=w2, expected at least 1"
    ]
    assert node_coverage_problems(slices, ["w1", "w2"], 0) == []


def test_no_slices_at_all() -> None:
    assert slice_problems([], D, ["w1"], 1) == [f"no ResourceSlice with spec.driver={D}"]
