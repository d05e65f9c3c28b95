"""Device metadata (KEP-5304): per request of a prepared claim, a metadata file and a CDI spec that
mounts it, the spec's id on the request's first device; removed at unprepare, written again at
start; and the misbehaviours metadata-all-requests and metadata-wrong-device."""

from __future__ import annotations

import json
from pathlib import Path

from fakedriver.grpcapi import dra_v1_pb2, dra_v1_pb2_grpc
from fakedriver.metadata import API_VERSIONS, requests_metadata

from unit.fakedriver.conftest import DRIVER, NODE, make_claim
from unit.fakedriver.test_prepare import prepare, unprepare

UID = "0d9c1a52-51a4-4bb6-9c55-0e3a5b7c1d01"
NAME = f"claim-{UID}"
CONTAINER_DIR = "/var/run/kubernetes.io/dra-device-attributes"
TWO_REQUESTS = [
    {"request": "req0", "device": "fa80-0"},
    {"request": "req1", "device": "fa80-1"},
]


def start(harness, *misbehaviours):
    controls = {"_all": json.dumps({"misbehaviours": list(misbehaviours)})}
    driver = harness.start(controls=controls)
    return driver, dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))


def host_file(harness, request: str, name: str = NAME) -> Path:
    return (
        harness.root
        / "plug"
        / "dra-device-metadata"
        / f"test-ns_{name}"
        / request
        / ("metadata.json")
    )


def metadata_spec(harness, request: str) -> Path:
    return harness.root / "cdi" / f"{DRIVER}_metadata_{UID}_{request}.json"


def stream(path: Path) -> list[dict]:
    decoder, text, objects, at = json.JSONDecoder(), path.read_text(), [], 0
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        obj, at = decoder.raw_decode(text, at)
        objects.append(obj)
    return objects


def listed(path: Path) -> list[tuple[str, str, str]]:
    (request,) = stream(path)[0]["requests"]
    return [(d["driver"], d["pool"], d["name"]) for d in request["devices"]]


def test_each_request_gets_a_metadata_file_mounted_by_its_own_cdi_device(harness):
    _, stub = start(harness)
    harness.claims.add(make_claim(UID, TWO_REQUESTS))
    result = prepare(stub, dra_v1_pb2, UID).claims[UID]
    assert result.error == ""
    assert {d.device_name: list(d.cdi_device_ids) for d in result.devices} == {
        "fa80-0": [f"{DRIVER}/device={UID}-fa80-0", f"{DRIVER}/metadata={UID}_req0"],
        "fa80-1": [f"{DRIVER}/device={UID}-fa80-1", f"{DRIVER}/metadata={UID}_req1"],
    }
    objects = stream(host_file(harness, "req1"))
    assert [o["apiVersion"] for o in objects] == list(API_VERSIONS)
    assert objects[0] == objects[1] | {"apiVersion": API_VERSIONS[0]}
    first = objects[0]
    assert first["kind"] == "DeviceMetadata"
    assert first["metadata"] == {"name": NAME, "namespace": "test-ns", "uid": UID, "generation": 1}
    assert "podClaimName" not in first
    (request,) = first["requests"]
    assert request["name"] == "req1"
    (device,) = request["devices"]
    assert (device["driver"], device["pool"], device["name"]) == (DRIVER, NODE, "fa80-1")
    slices = harness.slices.objects.values()
    published = {d["name"]: d for s in slices for d in s["spec"].get("devices") or ()}
    assert device["attributes"] == published["fa80-1"]["attributes"]

    spec = json.loads(metadata_spec(harness, "req0").read_text())
    assert spec["kind"] == f"{DRIVER}/metadata"
    (entry,) = spec["devices"]
    assert entry["name"] == f"{UID}_req0"
    assert entry["containerEdits"] == {
        "mounts": [
            {
                "hostPath": str(host_file(harness, "req0")),
                "containerPath": f"{CONTAINER_DIR}/resourceclaims/{NAME}/req0/"
                f"{DRIVER}-metadata.json",
                "options": ["ro", "bind"],
            }
        ]
    }


def test_a_claim_from_a_template_is_found_under_its_pod_claim_name(harness):
    _, stub = start(harness)
    claim = make_claim(UID, [{"request": "gpu/big", "device": "fa80-0"}], name="pod-gpu-x7k2p")
    claim["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": "gpu"}
    harness.claims.add(claim)
    ref = dra_v1_pb2.Claim(namespace="test-ns", uid=UID, name="pod-gpu-x7k2p")
    request = dra_v1_pb2.NodePrepareResourcesRequest(claims=[ref])
    assert stub.NodePrepareResources(request, timeout=60).claims[UID].error == ""
    first = stream(host_file(harness, "gpu", name="pod-gpu-x7k2p"))[0]
    assert first["podClaimName"] == "gpu"
    assert first["requests"][0]["name"] == "gpu/big"  # the subrequest, as in the result
    (entry,) = json.loads(metadata_spec(harness, "gpu").read_text())["devices"]
    mount = entry["containerEdits"]["mounts"][0]
    assert mount["containerPath"] == (
        f"{CONTAINER_DIR}/resourceclaimtemplates/gpu/gpu/{DRIVER}-metadata.json"
    )


def test_unprepare_removes_the_files_and_their_specs(harness):
    _, stub = start(harness)
    harness.claims.add(make_claim(UID, TWO_REQUESTS))
    prepare(stub, dra_v1_pb2, UID)
    unprepare(stub, dra_v1_pb2, UID)
    assert not (harness.root / "plug" / "dra-device-metadata" / f"test-ns_{NAME}").exists()
    assert list((harness.root / "cdi").iterdir()) == []


def test_a_restart_writes_lost_metadata_specs_again_and_removes_unknown_ones(harness):
    driver, stub = start(harness)
    harness.claims.add(make_claim(UID, TWO_REQUESTS))
    prepare(stub, dra_v1_pb2, UID)
    kept = metadata_spec(harness, "req0").read_text()
    harness.stop(driver)
    metadata_spec(harness, "req0").unlink()  # a reboot emptied /run
    orphan = harness.root / "cdi" / f"{DRIVER}_metadata_0d9c1a52-0000_req.json"
    orphan.write_text("{}")
    harness.start()
    assert metadata_spec(harness, "req0").read_text() == json.dumps(
        json.loads(kept), indent=2, sort_keys=True
    )
    assert not orphan.exists()


def test_misbehaviour_metadata_all_requests_lists_the_claims_devices_for_each(harness):
    _, stub = start(harness, "metadata-all-requests")
    harness.claims.add(make_claim(UID, TWO_REQUESTS))
    prepare(stub, dra_v1_pb2, UID)
    both = [(DRIVER, NODE, "fa80-0"), (DRIVER, NODE, "fa80-1")]
    assert listed(host_file(harness, "req0")) == both
    assert listed(host_file(harness, "req1")) == both


def test_misbehaviour_metadata_wrong_device_lists_another_device(harness):
    _, stub = start(harness, "metadata-wrong-device")
    harness.claims.add(make_claim(UID, [{"request": "req0", "device": "fa80-0"}]))
    prepare(stub, dra_v1_pb2, UID)
    (only,) = listed(host_file(harness, "req0"))
    assert only[:2] == (DRIVER, NODE) and only[2] != "fa80-0"


def test_no_device_metadata_writes_nothing(harness):
    driver = harness.start(device_metadata=False)
    stub = dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))
    harness.claims.add(make_claim(UID, TWO_REQUESTS))
    result = prepare(stub, dra_v1_pb2, UID).claims[UID]
    assert all(len(d.cdi_device_ids) == 1 for d in result.devices)
    assert not (harness.root / "plug" / "dra-device-metadata").exists()


def test_requests_metadata_lists_each_device_once_per_request():
    allocated = [("a", "p", "d0"), ("a", "p", "d0"), ("b/s", "p", "d1")]
    requests = requests_metadata(allocated, lambda name: {"x": {"string": name}})
    assert [(r.request, r.base_request, [d.name for d in r.devices]) for r in requests] == [
        ("a", "a", ["d0"]),
        ("b/s", "b", ["d1"]),
    ]
    assert requests[1].devices[0].attributes == {"x": {"string": "d1"}}
    every = requests_metadata(allocated, lambda name: {}, all_requests=True)
    assert [[d.name for d in r.devices] for r in every] == [["d0", "d1"], ["d0", "d1"]]
