"""Partitionable devices: the profile's partitionableDevices block (validation naming the
field, the two device kinds it defines) and shared counters read from ResourceSlices."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.cel.selection import kind_device_sets
from conformance.model.counters import consumption, counter_sets, overdrawn
from conformance.model.devices import published_devices
from conformance.model.partitionable import PARTITION_KIND, WHOLE_KIND
from conformance.model.profile import ProfileError
from conformance.model.profile_parse import load_profile

DRIVER = "gpu.example.com"
WHOLE_CEL = 'device.attributes["gpu.example.com"].whole == true'
PART_CEL = 'device.attributes["gpu.example.com"].whole == false'
BASE: dict[str, Any] = {
    "apiVersion": "dra-conformance.io/v1alpha1",
    "kind": "DriverProfile",
    "driver": DRIVER,
    "deviceClasses": {"default": "gpu.example.com"},
    "install": {"method": "preinstalled"},
    "verification": {"method": "env", "nameRegex": "^GPU_", "value": "device"},
    "capabilities": ["partitionable-devices"],
    "partitionableDevices": {
        "whole": {"class": "gpu.example.com", "expression": WHOLE_CEL},
        "partition": {"class": "gpu.example.com", "expression": PART_CEL},
    },
}


def load(tmp_path: Path, data: dict[str, Any]):  # noqa: ANN201
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(data))
    return load_profile(tmp_path / "p.yaml")


def problems(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    with pytest.raises(ProfileError) as info:
        load(tmp_path, data)
    return info.value.problems


def test_the_block_names_a_class_and_selector_per_side(tmp_path: Path) -> None:
    profile = load(tmp_path, BASE)
    assert profile.kind_class_and_expression(WHOLE_KIND) == ("gpu.example.com", WHOLE_CEL)
    assert profile.kind_class_and_expression(PARTITION_KIND) == ("gpu.example.com", PART_CEL)


def test_the_capability_requires_the_block(tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    del data["partitionableDevices"]
    [problem] = problems(tmp_path, data)
    assert problem.startswith("partitionableDevices: required when capabilities lists")
    del data["capabilities"]
    with pytest.raises(KeyError, match="no partitionableDevices"):
        load(tmp_path, data).kind_class_and_expression(WHOLE_KIND)


def test_each_side_needs_a_class(tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    del data["partitionableDevices"]["partition"]["class"]
    data["partitionableDevices"]["whole"]["size"] = 1
    assert sorted(problems(tmp_path, data)) == [
        "partitionableDevices.partition.class: required field is missing "
        "(expected a DeviceClass name (a DNS subdomain))",
        "partitionableDevices.whole.size: unknown field; expected one of: class, expression",
    ]


def _device(name: str, whole: bool, memory: str, parts: str) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {"whole": {"bool": whole}},
        "consumesCounters": [
            {"counterSet": "gpu-0", "counters": {"memory": {"value": memory},
                                                 "parts": {"value": parts}}}
        ],
    }  # fmt: skip


SLICES = [
    {
        "spec": {
            "driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1},
            "sharedCounters": [
                {"name": "gpu-0",
                 "counters": {"memory": {"value": "40Gi"}, "parts": {"value": "2"}}}
            ],
        }
    },
    {
        "spec": {
            "driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1},
            "devices": [
                _device("gpu-0", True, "40Gi", "2"),
                _device("gpu-0-p0", False, "20Gi", "1"),
                _device("gpu-0-p1", False, "20Gi", "1"),
                {"name": "plain"},
            ],
        }
    },
]  # fmt: skip


def test_kinds_find_whole_devices_and_partitions(tmp_path: Path) -> None:
    profile = load(tmp_path, BASE)
    classes = {"gpu.example.com": {"spec": {"selectors": []}}}
    sets = kind_device_sets(profile, published_devices(SLICES, DRIVER), classes)
    assert sets[WHOLE_KIND] == {"n1/gpu-0"}
    assert sets[PARTITION_KIND] == {"n1/gpu-0-p0", "n1/gpu-0-p1"}


def test_without_the_block_the_kinds_are_empty(tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    del data["partitionableDevices"], data["capabilities"]
    sets = kind_device_sets(load(tmp_path, data), published_devices(SLICES, DRIVER), {})
    assert sets[WHOLE_KIND] == sets[PARTITION_KIND] == frozenset()


def test_counters_and_what_devices_consume() -> None:
    assert counter_sets(SLICES, DRIVER) == {("n1", "gpu-0"): {"memory": 40 * 2**30, "parts": 2}}
    uses = consumption(SLICES, DRIVER)
    assert set(uses) == {"n1/gpu-0", "n1/gpu-0-p0", "n1/gpu-0-p1"}
    assert uses["n1/gpu-0-p1"] == {("n1", "gpu-0"): {"memory": 20 * 2**30, "parts": 1}}
    assert counter_sets(SLICES, "other.example.com") == {}


def test_overdrawn_names_the_counter_and_both_amounts() -> None:
    assert overdrawn(SLICES, DRIVER, ["n1/gpu-0", "n1/plain"]) == []
    assert overdrawn(SLICES, DRIVER, ["n1/gpu-0-p0", "n1/gpu-0-p1"]) == []
    assert overdrawn(SLICES, DRIVER, ["n1/gpu-0", "n1/gpu-0-p0"]) == [
        f"counter memory of set n1/gpu-0: allocated devices draw {60 * 2**30}, "
        f"the set holds {40 * 2**30}",
        "counter parts of set n1/gpu-0: allocated devices draw 3, the set holds 2",
    ]


def test_a_consumed_set_no_slice_publishes_is_reported() -> None:
    assert overdrawn(SLICES[1:], DRIVER, ["n1/gpu-0"]) == [
        "counter set n1/gpu-0 is consumed but published by no slice"
    ]
