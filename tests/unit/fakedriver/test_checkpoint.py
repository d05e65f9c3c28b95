"""Prepared claims survive a driver restart without being prepared again."""

from __future__ import annotations

import json

from fakedriver.checkpoint import Checkpoint, PreparedClaim, PreparedDevice
from fakedriver.grpcapi import dra_v1_pb2, dra_v1_pb2_grpc

from unit.fakedriver.conftest import DRIVER, make_claim
from unit.fakedriver.test_prepare import UID, UID2, prepare, unprepare


def _stub(harness, driver):
    return dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))


def test_restart_keeps_prepared_claims(harness):
    first = harness.start()
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    before = prepare(_stub(harness, first), dra_v1_pb2, UID)
    spec = harness.root / "cdi" / f"{DRIVER}-{UID}.json"
    mtime = spec.stat().st_mtime_ns
    harness.stop(first)

    harness.claims.fail_reads = True  # a restarted driver must not need the API for it
    second = harness.start()
    assert second.preparer.recovered_claims == 1
    stub = _stub(harness, second)
    assert prepare(stub, dra_v1_pb2, UID) == before
    assert spec.stat().st_mtime_ns == mtime  # not re-done
    assert unprepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    assert not spec.exists()
    harness.stop(second)

    third = harness.start()
    assert third.preparer.recovered_claims == 0


def test_lose_checkpoint_misbehaviour_forgets_claims(harness):
    first = harness.start()
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    prepare(_stub(harness, first), dra_v1_pb2, UID)
    harness.stop(first)
    controls = {"_all": json.dumps({"misbehaviours": {"lose-checkpoint-on-restart": True}})}
    second = harness.start(controls=controls)
    assert second.preparer.recovered_claims == 0
    prepare(_stub(harness, second), dra_v1_pb2, UID)
    assert harness.claims.reads == 2  # prepared again from scratch


def test_start_removes_cdi_specs_of_unknown_claims(harness):
    first = harness.start()
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    prepare(_stub(harness, first), dra_v1_pb2, UID)
    harness.stop(first)
    cdi = harness.root / "cdi"
    orphan = cdi / f"{DRIVER}-00000000-0000-0000-0000-00000000dead.json"
    orphan.write_text("{}")
    second = harness.start()
    assert not orphan.exists()
    assert (cdi / f"{DRIVER}-{UID}.json").exists()  # known to the checkpoint: kept
    assert second.preparer.removed_orphan_specs == ["00000000-0000-0000-0000-00000000dead"]


def test_lost_checkpoint_takes_the_running_claims_cdi_specs_with_it(harness):
    first = harness.start()
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    prepare(_stub(harness, first), dra_v1_pb2, UID)
    harness.stop(first)
    controls = {"_all": json.dumps({"misbehaviours": {"lose-checkpoint-on-restart": True}})}
    harness.start(controls=controls)
    assert not (harness.root / "cdi" / f"{DRIVER}-{UID}.json").exists()


def test_unprepare_on_shutdown_misbehaviour_drops_specs_and_checkpoint(harness):
    controls = {"_all": json.dumps({"misbehaviours": {"unprepare-on-shutdown": True}})}
    first = harness.start(controls=controls)
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    prepare(_stub(harness, first), dra_v1_pb2, UID)
    spec = harness.root / "cdi" / f"{DRIVER}-{UID}.json"
    assert spec.exists()
    harness.stop(first)
    assert not spec.exists()
    assert harness.start().preparer.recovered_claims == 0


def test_corrupt_checkpoint_is_moved_aside(harness):
    driver = harness.start()
    path = driver.checkpoint.path
    harness.stop(driver)
    path.write_text('{"version": 1, "checksum": "0", "claims": {"x": {}}}')
    restarted = harness.start()
    assert restarted.preparer.recovered_claims == 0
    assert list(path.parent.glob("checkpoint.json.corrupt-*"))


def test_checkpoint_round_trip_and_tamper_detection(tmp_path):
    store = Checkpoint(tmp_path / "cp.json")
    claim = PreparedClaim(
        uid=UID2,
        namespace="ns",
        name="c",
        devices=(PreparedDevice(("a",), "pool", "dev", ("k=v",), share_id="s"),),
        cdi_spec="/x.json",
        prepared_at=1.5,
    )
    store.save({UID2: claim})
    assert store.load() == {UID2: claim}
    document = json.loads(store.path.read_text())
    document["claims"][UID2]["name"] = "edited"
    store.path.write_text(json.dumps(document))
    assert store.load() == {}
