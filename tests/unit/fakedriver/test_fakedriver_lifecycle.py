"""The lifecycle misbehaviours over a real unix-socket channel: an unprepare that needs the
claim object, and a prepare that is not idempotent."""

from __future__ import annotations

import json

from fakedriver.grpcapi import dra_v1_pb2, dra_v1_pb2_grpc

from unit.fakedriver.conftest import make_claim
from unit.fakedriver.test_prepare import UID, UID2, prepare, spec_path, unprepare

UID3 = "5f0c8b0e-7b7a-4a37-9a51-3b0c2f1e0a03"


def _misbehaving(harness, name):
    driver = harness.start(controls={"_all": json.dumps({"misbehaviours": [name]})})
    return driver, dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))


def test_unprepare_needs_claim_fails_once_the_claim_is_gone(harness):
    driver, stub = _misbehaving(harness, "unprepare-needs-claim")
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fa80-1"}]))
    prepare(stub, dra_v1_pb2, UID, UID2)
    del harness.claims.claims[("test-ns", f"claim-{UID}")]  # deleted from the API
    response = unprepare(stub, dra_v1_pb2, UID, UID2)
    assert "not found: cannot unprepare (misbehaviour unprepare-needs-claim)" in (
        response.claims[UID].error
    )
    assert response.claims[UID2].error == ""  # its claim still exists
    # The claim stays prepared (checkpoint and CDI spec) while the kubelet retries.
    assert list(json.loads(driver.checkpoint.path.read_text())["claims"]) == [UID]
    assert spec_path(harness, UID).exists()
    assert not spec_path(harness, UID2).exists()


def test_unprepare_works_from_the_checkpoint_without_the_misbehaviour(harness):
    driver = harness.start()
    stub = dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    prepare(stub, dra_v1_pb2, UID)
    harness.claims.claims.clear()
    harness.claims.fail_reads = True  # unprepare never asks the API
    assert unprepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    assert json.loads(driver.checkpoint.path.read_text())["claims"] == {}


def test_prepare_not_idempotent_refuses_a_claim_already_prepared(harness):
    _, stub = _misbehaving(harness, "prepare-not-idempotent")
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    first = prepare(stub, dra_v1_pb2, UID)
    assert [d.device_name for d in first.claims[UID].devices] == ["fa80-0"]
    again = prepare(stub, dra_v1_pb2, UID).claims[UID]
    assert again.error.endswith("is already prepared (misbehaviour prepare-not-idempotent)")
    assert list(again.devices) == []
    # Once unprepared, the claim is prepared afresh.
    unprepare(stub, dra_v1_pb2, UID)
    assert prepare(stub, dra_v1_pb2, UID).claims[UID].error == ""


def test_restored_claims_stay_busy_after_their_unprepare(harness):
    busy = {"_all": json.dumps({"misbehaviours": ["restored-claims-stay-busy"]})}
    driver = harness.start(controls=busy)
    stub = dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fa80-0"}]))
    harness.claims.add(make_claim(UID3, [{"device": "fa80-1"}]))
    prepare(stub, dra_v1_pb2, UID3)
    # A claim this process prepared is freed as usual.
    assert unprepare(stub, dra_v1_pb2, UID3).claims[UID3].error == ""
    prepare(stub, dra_v1_pb2, UID)
    harness.stop(driver)  # the plugin restarts with UID in its checkpoint
    driver = harness.start(controls=busy)
    stub = dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))
    assert unprepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    assert not spec_path(harness, UID).exists()
    refused = prepare(stub, dra_v1_pb2, UID2).claims[UID2].error
    assert refused == (
        f"device fa80-0 is still busy although claim test-ns/claim-{UID} was unprepared "
        "(misbehaviour restored-claims-stay-busy)"
    )
    driver.apply_controls({}, "2")  # switched off: the device is free again
    assert prepare(stub, dra_v1_pb2, UID2).claims[UID2].error == ""
