"""NodePrepareResources / NodeUnprepareResources over a real unix-socket channel."""

from __future__ import annotations

import json

import pytest
from fakedriver.grpcapi import dra_v1_pb2, dra_v1_pb2_grpc, dra_v1beta1_pb2, dra_v1beta1_pb2_grpc

from unit.fakedriver.conftest import DRIVER, NODE, make_claim

UID = "5f0c8b0e-7b7a-4a37-9a51-3b0c2f1e0a01"
UID2 = "5f0c8b0e-7b7a-4a37-9a51-3b0c2f1e0a02"
# These tests look at the claims' own CDI specs: the device metadata files and their specs are
# tested in test_device_metadata.py.
NO_METADATA = {"device_metadata": False}


def _claims(pb2, *uids):
    return [pb2.Claim(namespace="test-ns", uid=u, name=f"claim-{u}") for u in uids]


def prepare(stub, pb2, *uids):
    return stub.NodePrepareResources(
        pb2.NodePrepareResourcesRequest(claims=_claims(pb2, *uids)), timeout=60
    )


def unprepare(stub, pb2, *uids):
    return stub.NodeUnprepareResources(
        pb2.NodeUnprepareResourcesRequest(claims=_claims(pb2, *uids)), timeout=60
    )


@pytest.fixture
def v1(harness):
    driver = harness.start(**NO_METADATA)
    return driver, dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))


def spec_path(harness, uid):
    return harness.root / "cdi" / f"{DRIVER}-{uid}.json"


def test_prepare_returns_devices_and_writes_one_cdi_spec(harness, v1):
    driver, stub = v1
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    response = prepare(stub, dra_v1_pb2, UID)
    result = response.claims[UID]
    assert result.error == ""
    assert [
        (
            list(d.request_names),
            d.pool_name,
            d.device_name,
            list(d.cdi_device_ids),
            d.HasField("share_id"),
        )
        for d in result.devices
    ] == [(["req"], NODE, "fa80-0", [f"{DRIVER}/device={UID}-fa80-0"], False)]
    spec = json.loads(spec_path(harness, UID).read_text())
    assert spec["cdiVersion"] == "0.6.0"
    assert spec["kind"] == f"{DRIVER}/device"
    assert spec["devices"] == [
        {
            "name": f"{UID}-fa80-0",
            "containerEdits": {
                "env": [
                    f"DRA_ASSIGNED_FA80_0={NODE}/fa80-0",
                    "DRA_DEVICE_FA80_0_MODEL=fa-80",
                    "DRA_DEVICE_FA80_0_MEMORY=80Gi",
                    f"DRA_DEVICE_FA80_0_POOL={NODE}",
                    f"DRA_DEVICE_FA80_0_CLAIM_UID={UID}",
                    f"DRA_DEVICE_FA80_0_CLAIM_NAME=claim-{UID}",
                    "DRA_DEVICE_FA80_0_CLAIM_NAMESPACE=test-ns",
                    "DRA_DEVICE_FA80_0_REQUEST=req",
                    "DRA_DEVICE_FA80_0_ADMIN_ACCESS=false",
                ]
            },
        }
    ]
    assert list((harness.root / "cdi").iterdir()) == [spec_path(harness, UID)]


def test_prepare_is_idempotent(harness, v1):
    driver, stub = v1
    harness.claims.add(
        make_claim(UID, [{"device": "fa80-0"}, {"device": "fa80-1", "request": "b"}])
    )
    first = prepare(stub, dra_v1_pb2, UID)
    mtime = spec_path(harness, UID).stat().st_mtime_ns
    second = prepare(stub, dra_v1_pb2, UID)
    assert first == second
    assert [d.device_name for d in second.claims[UID].devices] == ["fa80-0", "fa80-1"]
    assert harness.claims.reads == 1  # the second call came from the checkpoint
    assert spec_path(harness, UID).stat().st_mtime_ns == mtime


def test_every_claim_of_a_request_is_answered(harness, v1):
    _, stub = v1
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fa80-1"}]))
    missing = "00000000-0000-4000-8000-00000000dead"
    response = prepare(stub, dra_v1_pb2, UID, missing, UID2)
    assert set(response.claims) == {UID, missing, UID2}
    assert response.claims[missing].error.startswith("get ResourceClaim test-ns/claim-")
    assert response.claims[UID2].devices[0].device_name == "fa80-1"


def test_unprepare_removes_spec_and_checkpoint_entry(harness, v1):
    driver, stub = v1
    harness.claims.add(make_claim(UID, [{"device": "ff16-0"}]))
    prepare(stub, dra_v1_pb2, UID)
    assert UID in json.loads(driver.checkpoint.path.read_text())["claims"]
    response = unprepare(stub, dra_v1_pb2, UID)
    assert dict(response.claims) == {UID: dra_v1_pb2.NodeUnprepareResourceResponse(error="")}
    assert not spec_path(harness, UID).exists()
    assert json.loads(driver.checkpoint.path.read_text())["claims"] == {}
    # Again, and for a claim never seen: both are success.
    assert unprepare(stub, dra_v1_pb2, UID, UID2).claims[UID2].error == ""
    # A later prepare is a real one again.
    prepare(stub, dra_v1_pb2, UID)
    assert harness.claims.reads == 2
    assert spec_path(harness, UID).exists()


def test_v1beta1_service(harness):
    driver = harness.start(**NO_METADATA)
    stub = dra_v1beta1_pb2_grpc.DRAPluginStub(harness.channel(driver))
    harness.claims.add(make_claim(UID, [{"device": "fa80-1", "shareID": "s-1"}]))
    device = prepare(stub, dra_v1beta1_pb2, UID).claims[UID].devices[0]
    assert (device.device_name, list(device.cdi_device_ids)) == (
        "fa80-1",
        [f"{DRIVER}/device={UID}-fa80-1"],
    )
    assert unprepare(stub, dra_v1beta1_pb2, UID).claims[UID].error == ""
    assert not spec_path(harness, UID).exists()


def test_share_id_and_subrequest_names(harness, v1):
    _, stub = v1
    harness.claims.add(
        make_claim(
            UID,
            [{"device": "fa80-0", "request": "gpu/large", "shareID": "abc", "adminAccess": True}],
        )
    )
    device = prepare(stub, dra_v1_pb2, UID).claims[UID].devices[0]
    assert device.share_id == "abc"
    assert list(device.request_names) == ["gpu"]  # subrequest stripped, as the kubelet expects
    env = json.loads(spec_path(harness, UID).read_text())["devices"][0]["containerEdits"]["env"]
    assert "DRA_DEVICE_FA80_0_REQUEST=gpu/large" in env
    assert "DRA_DEVICE_FA80_0_ADMIN_ACCESS=true" in env


def test_opaque_config_class_then_claim_and_other_drivers_ignored(harness, v1):
    _, stub = v1
    config = [
        {
            "source": "FromClass",
            "requests": [],
            "opaque": {"driver": DRIVER, "parameters": {"mode": "x", "level": "1"}},
        },
        {
            "source": "FromClaim",
            "requests": ["req"],
            "opaque": {"driver": DRIVER, "parameters": {"level": "2"}},
        },
        {
            "source": "FromClaim",
            "requests": ["other"],
            "opaque": {"driver": DRIVER, "parameters": {"level": "9"}},
        },
        # Not ours, and not a string map: must be ignored, not rejected.
        {
            "source": "FromClaim",
            "requests": [],
            "opaque": {"driver": "gpu.example.com", "parameters": {"n": 1}},
        },
    ]
    # Claim config listed before class config must still win.
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}], config=config[1:] + config[:1]))
    assert prepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    env = json.loads(spec_path(harness, UID).read_text())["devices"][0]["containerEdits"]["env"]
    assert [e for e in env if "_CONFIG_" in e] == [
        "DRA_DEVICE_FA80_0_CONFIG_LEVEL=2",
        "DRA_DEVICE_FA80_0_CONFIG_MODE=x",
    ]


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        ({"status": {}}, "is not allocated"),
        ({"metadata": {"uid": "other-uid"}}, "was replaced"),
        ({"results": [{"device": "fa24-0", "pool": "kind-worker2"}]}, "not of this node's pool"),
        ({"results": [{"device": "nope-0"}]}, "is not a device of pool"),
        (
            {"results": [{"device": "fa80-0", "driver": "gpu.example.com"}]},
            "has no devices of driver",
        ),
        (
            {
                "config": [
                    {"source": "FromClaim", "opaque": {"driver": DRIVER, "parameters": {"n": 1}}}
                ]
            },
            "must be a JSON object of string values",
        ),
    ],
)
def test_prepare_errors_are_per_claim(harness, v1, claim, message):
    _, stub = v1
    body = make_claim(UID, claim.get("results", [{"device": "fa80-0"}]), config=claim.get("config"))
    if "status" in claim:
        body["status"] = claim["status"]
    body["metadata"].update(claim.get("metadata", {}))
    harness.claims.add(body)
    harness.claims.add(make_claim(UID2, [{"device": "fa80-1"}]))
    response = prepare(stub, dra_v1_pb2, UID, UID2)
    assert message in response.claims[UID].error
    assert not response.claims[UID].devices
    assert response.claims[UID2].error == ""  # one bad claim does not spoil the others
    assert not spec_path(harness, UID).exists()


def test_cdi_device_names_stay_unique_for_shared_devices(harness, v1):
    _, stub = v1
    results = [
        {"device": "fa80-0", "request": "a", "shareID": "s1"},
        {"device": "fa80-0", "request": "b", "shareID": "s2"},
    ]
    harness.claims.add(make_claim(UID, results))
    devices = prepare(stub, dra_v1_pb2, UID).claims[UID].devices
    assert [(d.share_id, list(d.cdi_device_ids)) for d in devices] == [
        ("s1", [f"{DRIVER}/device={UID}-fa80-0"]),
        ("s2", [f"{DRIVER}/device={UID}-fa80-0"]),
    ]
    spec = json.loads(spec_path(harness, UID).read_text())
    assert [d["name"] for d in spec["devices"]] == [f"{UID}-fa80-0"]


def _misbehaving(harness, name):
    controls = {"_all": json.dumps({"misbehaviours": [name]})}
    driver = harness.start(controls=controls, **NO_METADATA)
    return driver, dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))


def test_misbehaviour_first_claim_only_answers_the_others_without_devices(harness):
    _, stub = _misbehaving(harness, "first-claim-only")
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fa80-1"}]))
    response = prepare(stub, dra_v1_pb2, UID, UID2)
    assert [d.device_name for d in response.claims[UID].devices] == ["fa80-0"]
    assert response.claims[UID2].error == "" and list(response.claims[UID2].devices) == []
    # Alone in its call, a claim gets its devices.
    assert [d.device_name for d in prepare(stub, dra_v1_pb2, UID2).claims[UID2].devices] == [
        "fa80-1"
    ]


def test_misbehaviour_leak_cdi_spec_releases_the_claim_but_keeps_its_spec(harness):
    driver, stub = _misbehaving(harness, "leak-cdi-spec")
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fa80-0"}]))
    prepare(stub, dra_v1_pb2, UID)
    assert unprepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    assert spec_path(harness, UID).exists()
    assert json.loads(driver.checkpoint.path.read_text())["claims"] == {}
    # The device is released: another claim gets it at once.
    assert prepare(stub, dra_v1_pb2, UID2).claims[UID2].error == ""


def by_device(harness, *also):
    mis = ["cdi-specs-by-device", *also]
    driver = harness.start(controls={"_all": json.dumps({"misbehaviours": mis})}, **NO_METADATA)
    return driver, dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))


def test_specs_named_by_device_name_no_claim(harness):
    """cdi-specs-by-device (legal): nothing in the spec names the claim; the CDI device id
    the kubelet gets is the way to it."""
    driver, stub = by_device(harness)
    devices = [{"device": "fa80-0"}, {"device": "fa80-1"}]
    harness.claims.add(make_claim(UID, devices, name="gpus"))
    result = stub.NodePrepareResources(
        dra_v1_pb2.NodePrepareResourcesRequest(
            claims=[dra_v1_pb2.Claim(namespace="test-ns", uid=UID, name="gpus")]
        ),
        timeout=60,
    ).claims[UID]
    assert result.error == ""
    (path,) = (harness.root / "cdi").iterdir()
    assert path.name.startswith(f"{DRIVER}-dev-fa80-0-") and UID not in path.name
    text = path.read_text()
    assert UID not in text
    spec = json.loads(text)
    ids = [i for d in result.devices for i in d.cdi_device_ids]
    assert ids == [f"{spec['kind']}={d['name']}" for d in spec["devices"]]
    assert [d["name"].rsplit("-", 1)[0] for d in spec["devices"]] == ["fa80-0", "fa80-1"]
    unprepare(stub, dra_v1_pb2, UID)
    assert list((harness.root / "cdi").iterdir()) == []


def test_a_device_shared_by_two_claims_gets_two_specs_by_device(harness):
    driver, stub = by_device(harness)
    for uid in (UID, UID2):
        harness.claims.add(make_claim(uid, [{"device": "fs32-0", "shareID": uid[-4:] + "-s"}]))
    first = prepare(stub, dra_v1_pb2, UID).claims[UID].devices[0].cdi_device_ids
    second = prepare(stub, dra_v1_pb2, UID2).claims[UID2].devices[0].cdi_device_ids
    assert first != second  # CDI device names are unique across a node's specs
    assert len(list((harness.root / "cdi").iterdir())) == 2
    unprepare(stub, dra_v1_pb2, UID)
    (left,) = (harness.root / "cdi").iterdir()
    assert second[0].split("=", 1)[1] in left.read_text()


def test_leak_keeps_a_spec_named_by_device_and_a_restart_removes_orphans(harness):
    driver, stub = by_device(harness, "leak-cdi-spec")
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    prepare(stub, dra_v1_pb2, UID)
    unprepare(stub, dra_v1_pb2, UID)
    (leaked,) = (harness.root / "cdi").iterdir()
    harness.stop(driver)
    restarted = harness.start(**NO_METADATA)
    assert not leaked.exists()
    assert restarted.preparer.removed_orphan_specs == [leaked.name]
