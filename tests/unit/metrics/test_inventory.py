"""conformance.metrics.inventory: claims per state and devices per pool from API objects."""

from __future__ import annotations

from conformance.metrics.inventory import claim_state, cluster_inventory

DRIVER = "gpu.example.com"


def _claim(state: str, *devices: tuple[str, str]) -> dict:
    results = [{"request": "r", "driver": DRIVER, "pool": p, "device": d} for p, d in devices]
    claim: dict = {"metadata": {"name": "c", "namespace": "ns"}, "status": {}}
    if results:
        claim["status"]["allocation"] = {"devices": {"results": results}}
    if state in ("in use", "deleting"):
        claim["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": "u"}]
    if state == "deleting":
        claim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return claim


def _slice(pool: str, generation: int, *devices: dict) -> dict:
    return {
        "spec": {
            "driver": DRIVER,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": 1},
            "nodeName": pool,
            "devices": list(devices),
        }
    }


TAINT = {"key": "example.com/unhealthy", "value": "true", "effect": "NoSchedule"}


def test_claim_states() -> None:
    assert claim_state(_claim("pending")) == "pending"
    assert claim_state(_claim("allocated", ("node-1", "gpu-0"))) == "allocated, not in use"
    assert claim_state(_claim("in use", ("node-1", "gpu-0"))) == "in use"
    assert claim_state(_claim("deleting", ("node-1", "gpu-0"))) == "deleting"


def test_devices_per_pool_allocated_free_and_tainted() -> None:
    claims = [
        _claim("in use", ("node-1", "gpu-0")),
        _claim("allocated", ("node-1", "gpu-1"), ("node-2", "gpu-0")),
        _claim("pending"),
    ]
    slices = [
        _slice(
            "node-1", 2, {"name": "gpu-0"}, {"name": "gpu-1"}, {"name": "gpu-2", "taints": [TAINT]}
        ),
        _slice("node-1", 1, {"name": "gpu-0"}, {"name": "old-gpu"}),  # an older generation
        _slice("node-2", 1, {"name": "gpu-0"}, {"name": "gpu-1"}),
    ]
    inventory = cluster_inventory(claims, slices)
    assert inventory["claims"] == {
        "in use": 1,
        "allocated, not in use": 1,
        "pending": 1,
        "deleting": 0,
        "total": 3,
    }
    assert inventory["pools"] == [
        {"driver": DRIVER, "pool": "node-1", "devices": 3, "allocated": 2, "free": 1, "tainted": 1},
        {"driver": DRIVER, "pool": "node-2", "devices": 2, "allocated": 1, "free": 1, "tainted": 0},
    ]


def test_an_empty_cluster_has_zero_claims_and_no_pool() -> None:
    assert cluster_inventory([], []) == {
        "claims": {
            "in use": 0,
            "allocated, not in use": 0,
            "pending": 0,
            "deleting": 0,
            "total": 0,
        },
        "pools": [],
    }
