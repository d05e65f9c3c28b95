"""Misbehaviour background-release: the unprepare answers before the device is free, and a
prepare meanwhile sets the half-released device up without it."""

from __future__ import annotations

import json

import fakedriver.misbehave.unprepare
from fakedriver.grpcapi import dra_v1_pb2, dra_v1_pb2_grpc
from fakedriver.misbehave.release import ReleaseBook

from unit.fakedriver.conftest import NODE, make_claim
from unit.fakedriver.test_prepare import UID, UID2, prepare, spec_path, unprepare

MISBEHAVING = {"_all": json.dumps({"misbehaviours": ["background-release"]})}


def test_a_release_lasts_until_its_deadline_then_is_forgotten():
    book = ReleaseBook()
    book.start(["fa80-0", "fa80-1"], "ns/old", until=10.0)
    assert book.half_released(["fa80-0", "fa24-0"], now=9.9) == {"fa80-0": "ns/old"}
    assert book.half_released(["fa80-0", "fa80-1"], now=10.0) == {}
    book.start(["fa80-0"], "ns/newer", until=20.0)
    assert book.half_released(["fa80-0"], now=15.0) == {"fa80-0": "ns/newer"}


def _env(harness, uid: str) -> list[str]:
    return json.loads(spec_path(harness, uid).read_text())["devices"][0]["containerEdits"]["env"]


def _reuse(harness, controls=None) -> list[str]:
    """Prepare fa80-0 for one claim, unprepare it, prepare it for another: the second
    claim's CDI environment."""
    stub = dra_v1_pb2_grpc.DRAPluginStub(harness.channel(harness.start(controls=controls)))
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fa80-0"}]))
    assert prepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    assert unprepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    assert not spec_path(harness, UID).exists()  # the unprepare looks right
    result = prepare(stub, dra_v1_pb2, UID2).claims[UID2]
    assert result.error == "" and [d.device_name for d in result.devices] == ["fa80-0"]
    return _env(harness, UID2)


def test_a_correct_driver_sets_a_device_up_right_after_its_unprepare(harness):
    assert f"DRA_ASSIGNED_FA80_0={NODE}/fa80-0" in _reuse(harness)


def test_misbehaviour_background_release_leaves_the_half_released_device_out(harness):
    assert _reuse(harness, MISBEHAVING) == [f"DRA_DEVICE_FA80_0_RELEASING_FROM=test-ns/claim-{UID}"]


def test_misbehaviour_background_release_sets_the_device_up_once_released(harness, monkeypatch):
    monkeypatch.setattr(fakedriver.misbehave.unprepare, "BACKGROUND_RELEASE_SECONDS", 0.0)
    assert f"DRA_ASSIGNED_FA80_0={NODE}/fa80-0" in _reuse(harness, MISBEHAVING)


def test_misbehaviour_background_release_leaves_shared_devices_alone(harness):
    stub = dra_v1_pb2_grpc.DRAPluginStub(harness.channel(harness.start(controls=MISBEHAVING)))
    harness.claims.add(make_claim(UID, [{"device": "fs32-0", "shareID": "s-1"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fs32-0", "shareID": "s-2"}]))
    assert prepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    assert unprepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    assert prepare(stub, dra_v1_pb2, UID2).claims[UID2].error == ""
    assert f"DRA_ASSIGNED_FS32_0={NODE}/fs32-0" in _env(harness, UID2)
