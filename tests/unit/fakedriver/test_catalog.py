"""Catalog parsing, node matching and validation errors."""

from __future__ import annotations

import pytest
from fakedriver.catalog import Catalog, CatalogError, format_quantity, parse_quantity

from unit.fakedriver.conftest import NODE, NODE2


def test_default_catalog_matches_kind_workers_by_glob(catalog):
    assert [d.model for d in catalog.for_node("any-name-worker").devices] == [
        "fa-80",
        "fa-80",
        "ff-16",
        "fs-32",
        "fx-1",
    ]
    models = {d.model for d in catalog.for_node("dra-worker2").devices}
    assert models == {"fa-24", "fp-48", "fx-1"}
    assert [d.name for d in catalog.for_node("dra-control-plane").devices] == ["fa16-0", "fa16-1"]
    names = [d.name for d in catalog.for_node("kind-worker3").devices]
    assert names == [d.name for d in catalog.for_node("elsewhere").devices] == ["fa16-0", "fa16-1"]


def test_uuids_are_stable_and_node_specific(catalog):
    a = catalog.for_node(NODE).by_name()["fa80-0"].uuid
    assert a == catalog.for_node(NODE).by_name()["fa80-0"].uuid
    other = Catalog.from_dict(
        {"default": {"devices": [{"name": "fa80-0", "type": "fpga", "model": "m"}]}}
    )
    assert other.for_node(NODE2).devices[0].uuid != a


def test_first_match_wins():
    catalog = Catalog.from_dict(
        {
            "nodes": [
                {"match": "n-*", "devices": [{"name": "a-0", "type": "fpga", "model": "first"}]},
                {"match": "n-1", "devices": [{"name": "a-0", "type": "fpga", "model": "second"}]},
            ]
        }
    )
    assert catalog.for_node("n-1").devices[0].model == "first"
    assert catalog.for_node("m-1").devices == ()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"nodes": [{"devices": []}]}, "nodes[0].match"),
        (
            {"default": {"devices": [{"name": "x", "type": "fpga", "model": "m"}] * 2}},
            "device name 'x' is not unique",
        ),
        (
            {"default": {"devices": [{"name": "X_1", "type": "fpga", "model": "m"}]}},
            "devices[0].name",
        ),
        ({"default": {"devices": [{"name": "x", "type": "gpu", "model": "m"}]}}, "devices[0].type"),
        (
            {
                "default": {
                    "devices": [{"name": "x", "type": "fpga", "model": "m", "memory": "1.5Gi"}]
                }
            },
            "memory",
        ),
        (
            {
                "default": {
                    "devices": [{"name": "x", "type": "fpga", "model": "m", "numaNode": "0"}]
                }
            },
            "numaNode",
        ),
        (
            {
                "default": {
                    "partitionable": [
                        {"name": "p", "model": "m", "memory": "10Gi", "partitions": 3}
                    ]
                }
            },
            "not divisible by 3",
        ),
    ],
)
def test_validation_names_the_field(data, message):
    with pytest.raises(CatalogError, match=None) as info:
        Catalog.from_dict(data)
    assert message in str(info.value)


def test_partitionable_feature_flag():
    data = {
        "features": {"partitionableDevices": False},
        "default": {
            "partitionable": [{"name": "p", "model": "m", "memory": "8Gi", "partitions": 2}]
        },
    }
    inventory = Catalog.from_dict(data).for_node("n")
    assert inventory.devices == () and inventory.counter_sets == ()
    data["features"]["partitionableDevices"] = True
    inventory = Catalog.from_dict(data).for_node("n")
    assert [(d.name, d.memory) for d in inventory.devices] == [
        ("p-p0", "4Gi"),
        ("p-p1", "4Gi"),
        ("p-whole", "8Gi"),
    ]


def test_quantities():
    assert parse_quantity("80Gi") == 80 * 2**30
    assert parse_quantity("2k") == 2000
    assert format_quantity(parse_quantity("48Gi") // 4) == "12Gi"
    assert format_quantity(parse_quantity("1Gi") // 2 * 3) == "1536Mi"
    with pytest.raises(CatalogError):
        parse_quantity("12 Gi")


def test_shareable_device_with_its_request_policy(catalog):
    shared = catalog.for_node("dra-worker").by_name()["fs32-0"]
    assert shared.type == "shared" and shared.allow_multiple_allocations
    assert shared.request_policy == {"default": "8Gi", "validRange": {"min": "4Gi", "step": "4Gi"}}
    assert not catalog.for_node("dra-worker").by_name()["fa80-0"].allow_multiple_allocations


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"requestPolicy": {"default": "1Gi"}}, "needs allowMultipleAllocations"),
        ({"allowMultipleAllocations": "yes"}, "must be true or false"),
        (
            {"allowMultipleAllocations": True, "requestPolicy": {"validValues": ["1Gi"]}},
            "default: required",
        ),
        (
            {
                "allowMultipleAllocations": True,
                "requestPolicy": {"default": "1Gi", "validValues": ["1Gi"], "validRange": {}},
            },
            "exclude each other",
        ),
        (
            {"allowMultipleAllocations": True, "requestPolicy": {"default": "lots"}},
            "not an integer quantity",
        ),
    ],
)
def test_bad_sharing_fields_are_refused(extra, message):
    device = {"name": "s-0", "type": "shared", "model": "m", "memory": "8Gi", **extra}
    with pytest.raises(CatalogError, match=message):
        Catalog.from_dict({"default": {"devices": [device]}})


def test_firmware_is_a_semantic_version_with_a_default():
    device = {"name": "d", "type": "fpga", "model": "m"}
    data = {"default": {"devices": [device, {**device, "name": "e", "firmware": "2.0.1-rc.1"}]}}
    assert [d.firmware for d in Catalog.from_dict(data).for_node("n").devices] == [
        "1.4.2",
        "2.0.1-rc.1",
    ]
    with pytest.raises(CatalogError, match=r"devices\[0\]\.firmware: '2\.0' must be a semantic"):
        Catalog.from_dict({"default": {"devices": [{**device, "firmware": "2.0"}]}})


def test_binding_conditions_are_read_and_validated():
    fabric = {"name": "fx-0", "type": "fabric", "model": "fx-1"}
    device = (
        Catalog.from_dict(
            {
                "default": {
                    "devices": [
                        {
                            **fabric,
                            "bindingConditions": ["Attached"],
                            "bindingFailureConditions": ["AttachFailed"],
                            "bindsToNode": True,
                        }
                    ]
                }
            }
        )
        .for_node(NODE)
        .devices[0]
    )
    assert device.binding_conditions == ("Attached",)
    assert device.binding_failure_conditions == ("AttachFailed",)
    assert device.binds_to_node
    for bad, text in (
        ({"bindingConditions": ["A", "A"]}, "distinct"),
        ({"bindingConditions": ["a b"]}, "condition names"),
        ({"bindingConditions": ["A"], "bindingFailureConditions": ["A"]}, "both"),
        ({"bindingFailureConditions": ["F"]}, "needs bindingConditions"),
        ({"bindingConditions": ["A"], "bindsToNode": "yes"}, "true or false"),
    ):
        with pytest.raises(CatalogError, match=text):
            Catalog.from_dict({"default": {"devices": [{**fabric, **bad}]}})
