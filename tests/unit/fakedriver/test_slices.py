"""Catalog -> ResourceSlice rendering and publishing with pool generations."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest
from fakedriver.catalog import parse_quantity
from fakedriver.controls import NodeControls, Taint, parse_controls
from fakedriver.kubeapi import ApiError
from fakedriver.misbehave.slices import IN_USE_TAINT
from fakedriver.publisher import HASH_ANNOTATION, SlicePublisher, node_owner_reference
from fakedriver.slices import PCIE_ROOT, render_pool

from unit.fakedriver.conftest import DRIVER, NODE, NODE2, FakeSlices


def _mis(*names: str) -> NodeControls:
    return NodeControls(misbehaviours=frozenset(names))


def _devices(plan) -> list[dict]:
    return [d for s in plan.slices for d in s.spec.get("devices") or []]


def test_worker_one_is_heterogeneous(catalog):
    plan = render_pool(DRIVER, NODE, catalog.for_node(NODE), NodeControls())
    assert [s.name for s in plan.slices] == [f"{NODE}-fake-dra-conformance-io-devices-0"]
    spec = plan.slices[0].spec
    assert (spec["driver"], spec["nodeName"], spec["pool"]) == (
        DRIVER,
        NODE,
        {"name": NODE, "resourceSliceCount": 1},
    )
    by_name = {d["name"]: d for d in _devices(plan)}
    a, b, fpga = by_name["fa80-0"], by_name["fa80-1"], by_name["ff16-0"]
    attr = f"{DRIVER}/"
    assert a["attributes"][attr + "model"] == b["attributes"][attr + "model"] == {"string": "fa-80"}
    assert a["capacity"] == {f"{DRIVER}/memory": {"value": "80Gi"}}
    assert a["attributes"][attr + "numaNode"] != b["attributes"][attr + "numaNode"]
    assert a["attributes"][PCIE_ROOT] != b["attributes"][PCIE_ROOT]
    assert a["attributes"][attr + "interconnect"] == {"string": "fablink-a"}
    assert fpga["attributes"][attr + "type"] == {"string": "fpga"}
    assert a["attributes"][attr + "uuid"] != b["attributes"][attr + "uuid"]


def test_worker_two_partitionable_layout(catalog):
    plan = render_pool(DRIVER, NODE2, catalog.for_node(NODE2), NodeControls())
    assert len(plan.slices) == 2
    device_slice, counter_slice = (s.spec for s in plan.slices)
    assert "sharedCounters" not in device_slice
    assert "devices" not in counter_slice  # a slice has devices or counters, never both
    assert all(s.spec["pool"]["resourceSliceCount"] == 2 for s in plan.slices)
    counters = {c["name"]: c["counters"] for c in counter_slice["sharedCounters"]}
    assert counters == {"fp48-0": {"memory": {"value": "48Gi"}, "partitions": {"value": "4"}}}
    small = [
        d
        for d in device_slice["devices"]
        if d["attributes"][f"{DRIVER}/model"]["string"] == "fa-24"
    ]
    assert len(small) == 4 and all(
        d["capacity"][f"{DRIVER}/memory"]["value"] == "24Gi" for d in small
    )
    partitions = [d for d in device_slice["devices"] if "consumesCounters" in d]
    assert sorted(d["name"] for d in partitions) == [
        "fp48-0-p0",
        "fp48-0-p1",
        "fp48-0-p2",
        "fp48-0-p3",
        "fp48-0-whole",
    ]
    for device in partitions:
        assert device["attributes"][f"{DRIVER}/type"] == {"string": "partition"}
        assert [c["counterSet"] for c in device["consumesCounters"]] == ["fp48-0"]
        whole = device["name"] == "fp48-0-whole"  # what a selector tells them apart by
        assert device["attributes"][f"{DRIVER}/whole"] == {"bool": whole}
    assert all(f"{DRIVER}/whole" not in d["attributes"] for d in small)
    quarter = sum(
        parse_quantity(d["consumesCounters"][0]["counters"]["memory"]["value"])
        for d in partitions
        if d["name"] != "fp48-0-whole"
    )
    assert quarter == parse_quantity("48Gi")


@pytest.mark.parametrize("node", [NODE, NODE2, "kind-control-plane", "elsewhere"])
def test_device_names_unique_per_pool(catalog, node):
    names = [
        d["name"]
        for d in _devices(render_pool(DRIVER, node, catalog.for_node(node), NodeControls()))
    ]
    assert names and len(names) == len(set(names))


def test_withdrawn_device_omitted_and_empty_pool_still_published(catalog):
    inventory = catalog.for_node(NODE)
    controls = parse_controls(
        {NODE: json.dumps({"devices": {"fa80-0": {"withdrawn": True}}})}, NODE
    )
    assert [d["name"] for d in _devices(render_pool(DRIVER, NODE, inventory, controls))] == [
        "fa80-1",
        "ff16-0",
        "fs32-0",
        "fx-0",
    ]
    everything = {
        name: {"withdrawn": True} for name in ("fa80-0", "fa80-1", "ff16-0", "fs32-0", "fx-0")
    }
    empty = render_pool(
        DRIVER, NODE, inventory, parse_controls({NODE: json.dumps({"devices": everything})}, NODE)
    )
    assert len(empty.slices) == 1 and empty.slices[0].spec["devices"] == []


def test_taint_rendering(catalog):
    controls = parse_controls(
        {
            NODE: json.dumps(
                {"devices": {"ff16-0": {"taints": [{"key": "k.io/x", "effect": "NoSchedule"}]}}}
            )
        },
        NODE,
    )
    plan = render_pool(
        DRIVER,
        NODE,
        catalog.for_node(NODE),
        controls,
        taint_time=lambda d, t: "2026-01-01T00:00:00Z",
    )
    tainted = {d["name"]: d.get("taints") for d in _devices(plan)}
    assert tainted == {
        "fa80-0": None,
        "fa80-1": None,
        "ff16-0": [{"key": "k.io/x", "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:00Z"}],
        "fs32-0": None,
        "fx-0": None,
    }
    assert Taint("k.io/x").effect == "NoSchedule"
    hidden = render_pool(
        DRIVER, NODE, catalog.for_node(NODE),
        dataclasses.replace(controls, misbehaviours=frozenset({"unpublished-taints"})),
    )  # fmt: skip
    assert all("taints" not in d for d in _devices(hidden))


def test_none_taint_as_noschedule_misbehaviour(catalog):
    taints = [
        {"key": "k.io/info", "value": "v", "effect": "None"},
        {"key": "k.io/evict", "effect": "NoExecute"},
    ]
    controls = parse_controls({NODE: json.dumps({"devices": {"ff16-0": {"taints": taints}}})}, NODE)

    def published(node_controls: NodeControls) -> list[dict]:
        plan = render_pool(DRIVER, NODE, catalog.for_node(NODE), node_controls)
        return next(d["taints"] for d in _devices(plan) if d["name"] == "ff16-0")

    assert [t["effect"] for t in published(controls)] == ["None", "NoExecute"]
    broken = dataclasses.replace(controls, misbehaviours=frozenset({"none-taint-as-noschedule"}))
    assert published(broken) == [
        {"key": "k.io/info", "value": "v", "effect": "NoSchedule"},
        {"key": "k.io/evict", "effect": "NoExecute"},
    ]


def test_partitions_without_counters_misbehaviour(catalog):
    plan = render_pool(DRIVER, NODE2, catalog.for_node(NODE2), _mis("partitions-without-counters"))
    drawing = sorted(d["name"] for d in _devices(plan) if "consumesCounters" in d)
    assert drawing == ["fp48-0-whole"]
    assert any("sharedCounters" in s.spec for s in plan.slices)


def test_attribute_misbehaviours(catalog):
    inventory = catalog.for_node(NODE)
    wrong = _devices(render_pool(DRIVER, NODE, inventory, _mis("wrong-attribute")))[0]
    assert wrong["attributes"][f"{DRIVER}/model"] == {"string": "fa-80-wrong"}
    missing = _devices(render_pool(DRIVER, NODE, inventory, _mis("missing-attribute")))[0]
    assert (
        f"{DRIVER}/model" not in missing["attributes"] and f"{DRIVER}/type" in missing["attributes"]
    )
    bare = _devices(render_pool(DRIVER, NODE, inventory, _mis("unqualified-attribute")))[0]
    assert set(bare["attributes"]) == {
        "type",
        "model",
        "uuid",
        "firmware",
        "numaNode",
        "interconnect",
        PCIE_ROOT,
    }
    assert bare["attributes"]["firmware"] == {"version": "1.4.2"}
    assert set(bare["capacity"]) == {"memory"}
    slashed = _devices(render_pool(DRIVER, NODE, inventory, _mis("multi-slash-attribute")))[0]
    assert slashed["attributes"][f"{DRIVER}/topology/numa"] == {"string": "invalid"}
    assert f"{DRIVER}/model" in slashed["attributes"]


def test_pool_misbehaviours(catalog):
    inventory = catalog.for_node(NODE)
    inconsistent = render_pool(DRIVER, NODE, inventory, _mis("inconsistent-pool"))
    assert [s.spec["pool"]["resourceSliceCount"] for s in inconsistent.slices] == [2]
    duplicated = render_pool(DRIVER, NODE, inventory, _mis("duplicate-device-names"))
    names = Counter(d["name"] for d in _devices(duplicated))
    assert names["fa80-0"] == 2
    for item in duplicated.slices:  # the API server rejects duplicates within a slice
        in_slice = [d["name"] for d in item.spec["devices"]]
        assert len(in_slice) == len(set(in_slice))
    assert all(s.spec["pool"]["resourceSliceCount"] == 2 for s in duplicated.slices)
    # invalid-slice: the duplicate inside the first slice, which the API server rejects
    invalid = render_pool(DRIVER, NODE, inventory, _mis("invalid-slice"))
    first = [d["name"] for d in invalid.slices[0].spec["devices"]]
    assert first.count("fa80-0") == 2 and len(invalid.slices) == 1


def test_taint_prepared_devices_misbehaviour(catalog):
    inventory = catalog.for_node(NODE)
    prepared = frozenset({"fa80-1"})
    honest = render_pool(DRIVER, NODE, inventory, NodeControls(), prepared=prepared)
    assert all("taints" not in d for d in _devices(honest))
    broken = render_pool(DRIVER, NODE, inventory, _mis("taint-prepared-devices"), prepared=prepared)
    taints = {d["name"]: d.get("taints") for d in _devices(broken)}
    assert taints == {
        "fa80-0": None,
        "fa80-1": [{"key": IN_USE_TAINT["key"], "effect": "NoExecute"}],
        "ff16-0": None,
        "fs32-0": None,
        "fx-0": None,
    }


def test_partitionable_can_be_turned_off(catalog):
    plan = render_pool(DRIVER, NODE2, catalog.for_node(NODE2), NodeControls(), partitionable=False)
    assert len(plan.slices) == 1
    assert [d["name"] for d in _devices(plan)] == ["fa24-0", "fa24-1", "fa24-2", "fa24-3", "fx-0"]


# -- publisher -----------------------------------------------------------------


def _plan(catalog, node=NODE, controls=None):
    return render_pool(DRIVER, node, catalog.for_node(node), controls or NodeControls())


def test_generation_bumps_only_on_change(catalog):
    api = FakeSlices()
    owner = node_owner_reference({"metadata": {"name": NODE, "uid": "node-uid-1"}})
    publisher = SlicePublisher(api, DRIVER, NODE, owner)
    first = publisher.publish(_plan(catalog))
    assert (first.generation, first.changed) == (1, True)
    stored = next(iter(api.objects.values()))
    assert stored["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": "node-uid-1", "controller": True}
    ]
    assert stored["metadata"]["annotations"][HASH_ANNOTATION] == _plan(catalog).content_hash()
    writes = api.writes
    again = publisher.publish(_plan(catalog))
    assert (again.generation, again.changed, api.writes) == (1, False, writes)
    changed = publisher.publish(_plan(catalog, controls=_mis("wrong-attribute")))
    assert (changed.generation, changed.changed) == (2, True)
    assert {o["spec"]["pool"]["generation"] for o in api.objects.values()} == {2}


def test_republish_repairs_deleted_slices_and_removes_stale_ones(catalog):
    api = FakeSlices()
    publisher = SlicePublisher(api, DRIVER, NODE2)
    publisher.publish(_plan(catalog, NODE2))
    counters = next(n for n in api.objects if "counters" in n)
    del api.objects[counters]  # e.g. wiped by the kubelet
    stale = json.loads(json.dumps(next(iter(api.objects.values()))))
    stale["metadata"]["name"] = "left-over-from-an-old-version"
    api.objects[stale["metadata"]["name"]] = stale
    foreign = json.loads(json.dumps(stale))
    foreign["metadata"]["name"] = "other-node-slice"
    foreign["spec"]["nodeName"] = "other-node"
    api.objects["other-node-slice"] = foreign
    result = publisher.publish(_plan(catalog, NODE2))
    assert result.generation == 2 and result.changed
    assert counters in api.objects
    assert "left-over-from-an-old-version" not in api.objects
    assert "other-node-slice" in api.objects  # not ours to touch


def test_a_new_publisher_continues_the_generation(catalog):
    api = FakeSlices()
    SlicePublisher(api, DRIVER, NODE).publish(_plan(catalog))
    SlicePublisher(api, DRIVER, NODE).publish(_plan(catalog, controls=_mis("wrong-attribute")))
    restarted = SlicePublisher(api, DRIVER, NODE)
    assert restarted.publish(_plan(catalog, controls=_mis("wrong-attribute"))).generation == 2
    assert restarted.publish(_plan(catalog)).generation == 3


def test_conflicts_are_retried(catalog):
    class Flaky(FakeSlices):
        failed = False

        def update_slice(self, body):
            if not self.failed:
                self.failed = True
                raise ApiError(409, "the object has been modified")
            return super().update_slice(body)

    api = Flaky()
    publisher = SlicePublisher(api, DRIVER, NODE)
    publisher.publish(_plan(catalog))
    assert publisher.publish(_plan(catalog, controls=_mis("missing-attribute"))).generation == 2
    assert api.failed


def test_driver_falls_back_when_the_api_drops_shared_counters(harness):
    harness.slices.drop_shared_counters = True
    driver = harness.start(node=NODE2)
    assert driver.partitionable is False
    assert sorted(harness.slices.devices()) == ["fa24-0", "fa24-1", "fa24-2", "fa24-3", "fx-0"]
    assert not any("counters" in n for n in harness.slices.objects)


def test_capacity_and_phantom_misbehaviours(catalog):
    inventory = catalog.for_node(NODE)
    bare = _devices(render_pool(DRIVER, NODE, inventory, _mis("missing-capacity")))
    assert bare and all("capacity" not in d for d in bare)
    haunted = _devices(render_pool(DRIVER, NODE, inventory, _mis("phantom-device")))
    names = [d["name"] for d in haunted]
    assert names == ["fa80-0", "fa80-1", "ff16-0", "fs32-0", "fx-0", "fa80-0-ghost"]
    real, ghost = haunted[0], haunted[-1]
    uuid = f"{DRIVER}/uuid"
    assert ghost["attributes"][uuid] == {"string": real["attributes"][uuid]["string"] + "-ghost"}
    assert {k: v for k, v in ghost["attributes"].items() if k != uuid} == {
        k: v for k, v in real["attributes"].items() if k != uuid
    }


def test_shareable_device_is_published_with_its_request_policy(catalog):
    plan = render_pool(DRIVER, NODE, catalog.for_node(NODE), NodeControls())
    by_name = {d["name"]: d for d in _devices(plan)}
    shared = by_name["fs32-0"]
    assert shared["allowMultipleAllocations"] is True
    assert shared["capacity"][f"{DRIVER}/memory"] == {
        "value": "32Gi",
        "requestPolicy": {"default": "8Gi", "validRange": {"min": "4Gi", "step": "4Gi"}},
    }
    assert shared["attributes"][f"{DRIVER}/type"] == {"string": "shared"}
    assert "allowMultipleAllocations" not in by_name["fa80-0"]
    assert "requestPolicy" not in by_name["fa80-0"]["capacity"][f"{DRIVER}/memory"]
