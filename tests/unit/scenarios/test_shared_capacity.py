"""Shareable devices from slices and how many claims of a capacity request fit on one
(shared_capacity_checks), against the v1.37.2 requestPolicy rules."""

from __future__ import annotations

from decimal import Decimal

import pytest
from kubernetes.utils import parse_quantity
from shared_capacity_checks import SharedCapacity, shared_devices

D = "gpu.example.com"
GI = parse_quantity("1Gi")


def _slice(devices: list[dict], generation: int = 1, node: str = "w1") -> dict:
    return {
        "spec": {
            "driver": D,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        }
    }


def _device(name: str, shared: bool = True, **capacity: dict) -> dict:
    body: dict = {"name": name, "capacity": capacity}
    if shared:
        body["allowMultipleAllocations"] = True
    return body


def test_only_devices_allowing_multiple_allocations_of_the_newest_slices() -> None:
    slices = [
        _slice([_device("old")], generation=1),
        _slice([_device("s0", memory={"value": "32Gi"}), _device("x", shared=False)], generation=2),
    ]
    (device,) = shared_devices(slices, D)
    assert device.id == "w1/s0" and device.node == "w1"
    assert device.capacity[f"{D}/memory"].value == 32 * GI  # unqualified: the driver's domain


@pytest.mark.parametrize(
    ("policy", "requested", "consumed"),
    [
        (None, 5 * GI, 5 * GI),  # no policy: as requested
        (None, None, 32 * GI),  # not requested, no policy: the whole capacity
        ({"default": "8Gi"}, None, 8 * GI),
        ({"default": "4Gi", "validValues": ["4Gi", "16Gi"]}, 5 * GI, 16 * GI),
        ({"default": "4Gi", "validValues": ["4Gi", "16Gi"]}, 17 * GI, None),
        ({"default": "8Gi", "validRange": {"min": "4Gi", "step": "4Gi"}}, 16 * GI, 16 * GI),
        ({"default": "8Gi", "validRange": {"min": "4Gi", "step": "4Gi"}}, 13 * GI, 16 * GI),
        ({"default": "8Gi", "validRange": {"min": "4Gi", "step": "4Gi"}}, 1 * GI, 4 * GI),
        ({"default": "8Gi", "validRange": {"min": "4Gi", "max": "12Gi"}}, 13 * GI, None),
    ],
)
def test_requests_are_rounded_as_the_policy_says(
    policy: dict | None, requested: Decimal | None, consumed: Decimal | None
) -> None:
    assert SharedCapacity(32 * GI, policy).consumed(requested) == consumed


def test_how_many_claims_fit() -> None:
    policy = {"default": "8Gi", "validRange": {"min": "4Gi", "step": "4Gi"}}
    (device,) = shared_devices(
        [_slice([_device("s0", memory={"value": "32Gi", "requestPolicy": policy})])], D
    )
    memory = f"{D}/memory"
    assert device.fits({memory: 16 * GI}) == 2
    assert device.fits({memory: 13 * GI}) == 2  # rounded up to 16Gi
    assert device.fits({memory: 10 * GI}) == 2  # 12Gi each: two fit, 8Gi left over
    assert device.fits({f"{D}/other": GI}) == 0  # the device has no such capacity
    # An unrequested capacity without a policy is consumed whole: one claim at a time.
    (two,) = shared_devices(
        [_slice([_device("s1", memory={"value": "32Gi"}, cores={"value": "8"})])], D
    )
    assert two.fits({memory: 16 * GI}) == 1
