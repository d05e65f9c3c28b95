"""Prepare waits for, then refuses, a device still prepared for another claim (after a
force delete)."""

from __future__ import annotations

import json
import logging
import threading

import fakedriver.prepare
import pytest
from fakedriver.grpcapi import dra_v1_pb2, dra_v1_pb2_grpc

from conformance.kube.waits import wait_until
from unit.fakedriver.conftest import make_claim
from unit.fakedriver.test_prepare import UID, UID2, prepare, spec_path, unprepare


def _stub(harness, driver):
    return dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))


def _error(stub, uid):
    return prepare(stub, dra_v1_pb2, uid).claims[uid].error


@pytest.fixture(autouse=True)
def short_wait(monkeypatch):
    monkeypatch.setattr(fakedriver.prepare, "HELD_DEVICE_WAIT_SECONDS", 0.5)


def test_device_of_another_prepared_claim_is_refused_until_unprepared(harness):
    stub = _stub(harness, harness.start())
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    assert _error(stub, UID) == ""
    # The old claim is freed in the API (force delete) but the node still has it prepared.
    harness.claims.add(make_claim(UID2, [{"device": "fa80-0"}]))
    error = _error(stub, UID2)
    assert "fa80-0 is still prepared for claim test-ns/claim-" + UID in error
    assert unprepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    assert _error(stub, UID2) == ""


def test_a_waiting_prepare_goes_on_as_soon_as_the_holder_is_unprepared(
    harness, monkeypatch, caplog
):
    # Longer than the call's deadline: a prepare that is not woken by the unprepare gets
    # DEADLINE_EXCEEDED rather than the device once its wait ran out.
    monkeypatch.setattr(fakedriver.prepare, "HELD_DEVICE_WAIT_SECONDS", 90.0)
    caplog.set_level(logging.INFO, logger="fakedriver.prepare")
    stub = _stub(harness, harness.start())
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fa80-0"}]))
    assert _error(stub, UID) == ""

    def waiting() -> list[str]:
        return [r.getMessage() for r in caplog.records if "waits for claim" in r.getMessage()]

    def unprepare_once_it_waits() -> None:
        # the holder lets go once the second prepare waits, not after a time a loaded
        # machine may take to get that prepare going
        wait_until(waiting, bool, describe="the second prepare to wait", timeout=60, interval=0.05)
        unprepared.append(unprepare(stub, dra_v1_pb2, UID).claims[UID].error)

    unprepared: list[str] = []
    holder = threading.Thread(target=unprepare_once_it_waits)
    holder.start()
    try:
        error = _error(stub, UID2)  # a 60 s call: a prepare never woken fails on it
    finally:
        holder.join(90)
    assert unprepared == [""]
    assert error == ""
    assert f"claim {UID}" in waiting()[0]


def test_a_holder_whose_claim_is_gone_does_not_block(harness):
    stub = _stub(harness, harness.start())
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    assert _error(stub, UID) == ""
    del harness.claims.claims[("test-ns", f"claim-{UID}")]
    harness.claims.add(make_claim(UID2, [{"device": "fa80-0"}]))
    assert _error(stub, UID2) == ""


def test_a_holder_replaced_by_a_claim_of_the_same_name_does_not_block(harness):
    stub = _stub(harness, harness.start())

    def prepare_named(uid):
        claim = dra_v1_pb2.Claim(namespace="test-ns", uid=uid, name="same")
        request = dra_v1_pb2.NodePrepareResourcesRequest(claims=[claim])
        return stub.NodePrepareResources(request, timeout=60).claims[uid].error

    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}], name="same"))
    assert prepare_named(UID) == ""
    harness.claims.add(make_claim(UID2, [{"device": "fa80-0"}], name="same"))
    assert prepare_named(UID2) == ""


@pytest.mark.parametrize("sharing", [{"shareID": "a1"}, {"adminAccess": True}])
def test_shared_and_admin_access_devices_are_prepared_for_several_claims(harness, sharing):
    stub = _stub(harness, harness.start())
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    assert _error(stub, UID) == ""
    harness.claims.add(make_claim(UID2, [{"device": "fa80-0", **sharing}]))
    assert _error(stub, UID2) == ""


def test_misbehaviour_prepare_held_devices_hands_the_device_out_twice(harness):
    controls = {"_all": json.dumps({"misbehaviours": ["prepare-held-devices"]})}
    stub = _stub(harness, harness.start(controls=controls))
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fa80-0"}]))
    assert _error(stub, UID) == ""
    assert _error(stub, UID2) == ""


def test_shares_of_one_device_are_prepared_and_unprepared_separately(harness):
    driver = harness.start()
    stub = _stub(harness, driver)
    harness.claims.add(make_claim(UID, [{"device": "fs32-0", "shareID": "s-1"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fs32-0", "shareID": "s-2"}]))
    assert _error(stub, UID) == "" and _error(stub, UID2) == ""
    specs = {uid: spec_path(harness, uid) for uid in (UID, UID2)}
    for uid, path in specs.items():  # each claim its own CDI device and environment
        env = json.loads(path.read_text())["devices"][0]["containerEdits"]["env"]
        assert f"DRA_DEVICE_FS32_0_CLAIM_UID={uid}" in env
    assert unprepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    assert not specs[UID].exists() and specs[UID2].exists()
    assert set(driver.preparer.prepared()) == {UID2}


def test_misbehaviour_exclusive_shared_devices_refuses_a_second_share(harness):
    controls = {"_all": json.dumps({"misbehaviours": ["exclusive-shared-devices"]})}
    stub = _stub(harness, harness.start(controls=controls))
    harness.claims.add(make_claim(UID, [{"device": "fs32-0", "shareID": "s-1"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fs32-0", "shareID": "s-2"}]))
    assert _error(stub, UID) == ""
    assert "fs32-0 is still prepared for claim test-ns/claim-" + UID in _error(stub, UID2)
    # Admin access is still let through.
    harness.claims.add(make_claim(UID2, [{"device": "fs32-0", "adminAccess": True}]))
    assert _error(stub, UID2) == ""


def test_misbehaviour_keep_released_devices_never_prepares_a_released_device_again(harness):
    controls = {"_all": json.dumps({"misbehaviours": ["keep-released-devices"]})}
    stub = _stub(harness, harness.start(controls=controls))
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    assert _error(stub, UID) == ""
    assert unprepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    assert not spec_path(harness, UID).exists()  # the unprepare itself looks right
    del harness.claims.claims[("test-ns", f"claim-{UID}")]
    harness.claims.add(make_claim(UID2, [{"device": "fa80-0"}]))
    error = _error(stub, UID2)
    assert f"device fa80-0 is still busy although claim test-ns/claim-{UID} was unprepared" in (
        error
    )
