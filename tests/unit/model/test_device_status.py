"""A driver's entries in status.devices judged against the claim's allocation
(conformance/model/device_status.py)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.model.device_status import (
    allocated_keys,
    driver_entries,
    entry_problems,
    missing_entries,
    status_summary,
)

DRIVER = "gpu.example.com"
SHARE = "6a1d2c3b-0000-4000-8000-000000000001"


def result(device: str, driver: str = DRIVER, **extra: Any) -> dict[str, Any]:
    return {"request": "req", "driver": driver, "pool": "node-a", "device": device, **extra}


def entry(device: str, driver: str = DRIVER, **extra: Any) -> dict[str, Any]:
    return {
        "driver": driver,
        "pool": "node-a",
        "device": device,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Prepared",
                "lastTransitionTime": "2026-01-02T03:04:05Z",
            }
        ],
        **extra,
    }


def claim(results: list[dict[str, Any]], devices: list[dict[str, Any]] | None) -> dict[str, Any]:
    status: dict[str, Any] = {"allocation": {"devices": {"results": results}}}
    if devices is not None:
        status["devices"] = devices
    return {"status": status}


def test_every_allocated_device_of_the_driver_needs_an_entry() -> None:
    c = claim(
        [result("gpu-0"), result("gpu-1"), result("nic-0", driver="nic.example.com")],
        [entry("gpu-0"), entry("nic-0", driver="nic.example.com")],
    )
    assert allocated_keys(c, DRIVER) == [
        (DRIVER, "node-a", "gpu-0", ""),
        (DRIVER, "node-a", "gpu-1", ""),
    ]
    assert missing_entries(c, DRIVER) == [(DRIVER, "node-a", "gpu-1", "")]
    assert [e["device"] for e in driver_entries(c, DRIVER)] == ["gpu-0"]
    assert missing_entries(claim([result("gpu-0")], None), DRIVER) == [
        (DRIVER, "node-a", "gpu-0", "")
    ]


def test_a_shared_device_is_named_with_its_share_id() -> None:
    c = claim([result("gpu-0", shareID=SHARE)], [entry("gpu-0")])
    assert missing_entries(c, DRIVER) == [(DRIVER, "node-a", "gpu-0", SHARE)]
    assert entry_problems(c, DRIVER) == [
        f"status.devices entry {DRIVER} node-a/gpu-0 names no device of the claim's allocation"
    ]
    ok = claim([result("gpu-0", shareID=SHARE)], [entry("gpu-0", shareID=SHARE)])
    assert missing_entries(ok, DRIVER) == [] and entry_problems(ok, DRIVER) == []


def test_well_formed_entries_with_data_and_network_data_pass() -> None:
    network = {"interfaceName": "eth1", "ips": ["10.0.0.5/24", "2001:db8::5/64"]}
    c = claim([result("gpu-0")], [entry("gpu-0", data={"a": 1}, networkData=network)])
    assert entry_problems(c, DRIVER) == []


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"networkData": {"ips": ["10.0.0.5"]}}, "'10.0.0.5' is not an address in CIDR form"),
        ({"networkData": {"ips": ["10.0.0.300/24"]}}, "is not an address in CIDR form"),
        ({"data": ["x"]}, "data is not a JSON object"),
        ({"conditions": [{"type": "Ready", "status": "Yes"}]}, "has status 'Yes'"),
        ({"conditions": [{"status": "True", "reason": "R"}]}, "conditions[0] has no type"),
        ({"conditions": [{"type": "Ready", "status": "True"}]}, "has no lastTransitionTime"),
        ({"conditions": [{"type": "T", "status": "True", "reason": "not ok"}]}, "has reason"),
    ],
)
def test_malformed_entries_are_named(extra: dict[str, Any], problem: str) -> None:
    problems = entry_problems(claim([result("gpu-0")], [entry("gpu-0", **extra)]), DRIVER)
    assert problems and all(
        p.startswith(f"status.devices entry {DRIVER} node-a/gpu-0") for p in problems
    )
    assert any(problem in p for p in problems), problems


def test_other_drivers_entries_are_not_judged() -> None:
    other = entry("nic-0", driver="nic.example.com", data=["not an object"])
    assert entry_problems(claim([result("gpu-0")], [entry("gpu-0"), other]), DRIVER) == []


def test_a_deallocated_claim_has_no_allocated_devices() -> None:
    released = {"status": {"devices": [entry("gpu-0")]}}
    assert allocated_keys(released, DRIVER) == []
    assert entry_problems(released, DRIVER) == [
        f"status.devices entry {DRIVER} node-a/gpu-0 names no device of the claim's allocation"
    ]
    assert status_summary(None) == {"allocation.devices.results": [], "devices": []}
