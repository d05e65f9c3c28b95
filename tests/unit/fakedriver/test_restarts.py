"""What the fake driver does across a kubelet restart or a node reboot, and the misbehaviours
that break it: `register-once` (a restarted kubelet cannot register the plugin again),
`cdi-not-recreated` (a reboot's lost CDI specs are not written again, at start or at the next
prepare) and
`no-republish-after-restart` (a restarted plugin never writes its slices again)."""

from __future__ import annotations

import json
from dataclasses import replace

import fakedriver.driver
import grpc
import pytest
from fakedriver.checkpoint import Checkpoint
from fakedriver.grpcapi import dra_v1_pb2, dra_v1_pb2_grpc
from fakedriver.grpcapi import pluginregistration_v1_pb2 as reg_pb2
from fakedriver.grpcapi import pluginregistration_v1_pb2_grpc as reg_grpc
from tenacity import retry, stop_after_delay, wait_fixed

from unit.fakedriver.conftest import DRIVER, make_claim
from unit.fakedriver.test_prepare import UID, prepare

NO_REPUBLISH = ["no-republish-after-restart"]


def _register(stub) -> None:
    stub.GetInfo(reg_pb2.InfoRequest(), timeout=60)
    stub.NotifyRegistrationStatus(reg_pb2.RegistrationStatus(plugin_registered=True), timeout=60)


def test_register_once_refuses_a_second_kubelet_until_switched_off(harness):
    once = {"_all": json.dumps({"misbehaviours": ["register-once"]})}
    driver = harness.start(controls=once)
    stub = reg_grpc.RegistrationStub(harness.channel(driver, registration=True))
    _register(stub)  # the first kubelet registers it
    assert driver.options.registration_socket.exists()  # the socket stays: no deregistration
    with pytest.raises(grpc.RpcError) as err:
        stub.GetInfo(reg_pb2.InfoRequest(), timeout=60)  # a restarted kubelet asks again
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "register-once" in err.value.details()
    driver.apply_controls({}, "2")
    _register(stub)


def test_a_registration_republishes_slices_the_kubelet_deleted(harness, monkeypatch):
    # Only the republish right at registration may bring them back: the one a while later
    # comes after the test, and there is no resync loop (the harness starts no background
    # threads). So the wait below can be generous without letting a late republish pass.
    monkeypatch.setattr(fakedriver.driver, "REREGISTRATION_REPUBLISH_DELAY", 3600.0)
    driver = harness.start()
    assert harness.slices.objects
    for name in list(harness.slices.objects):
        harness.slices.delete_slice(name)  # a restarting kubelet wipes the node's slices
    _register(reg_grpc.RegistrationStub(harness.channel(driver, registration=True)))

    @retry(stop=stop_after_delay(60), wait=wait_fixed(0.05), reraise=True)
    def republished() -> None:
        assert harness.slices.objects

    republished()


@pytest.mark.parametrize(
    ("misbehaviours", "recreated"), [([], True), (["cdi-not-recreated"], False)]
)
def test_prepare_after_a_reboot_writes_the_lost_cdi_spec_again(harness, misbehaviours, recreated):
    driver = harness.start(controls={"_all": json.dumps({"misbehaviours": misbehaviours})})
    stub = dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    spec = harness.root / "cdi" / f"{DRIVER}-{UID}.json"
    first = prepare(stub, dra_v1_pb2, UID).claims[UID]
    assert spec.exists()
    spec.unlink()  # the reboot emptied /run; the checkpoint survived
    again = prepare(stub, dra_v1_pb2, UID).claims[UID]
    assert again.error == "" and list(again.devices) == list(first.devices)
    assert spec.exists() is recreated


@pytest.mark.parametrize(("misbehaviours", "republished"), [([], True), (NO_REPUBLISH, False)])
def test_a_restarted_plugin_publishes_its_wiped_slices_again(harness, misbehaviours, republished):
    controls = {"_all": json.dumps({"misbehaviours": misbehaviours})}
    first = harness.start(controls=controls)
    assert harness.slices.objects  # a plugin starting on a node without slices publishes
    harness.stop(first)
    restarted = harness.start(controls=controls)  # the old slices are still there
    assert restarted.published  # ready either way: the broken one counts the old slices
    for name in list(harness.slices.objects):
        harness.slices.delete_slice(name)  # what the kubelet does after a longer absence
    restarted.republish()  # what its resync loop does
    assert bool(harness.slices.devices()) is republished
    restarted.apply_controls({}, "2")  # switched off: it publishes again
    assert harness.slices.devices()


@pytest.mark.parametrize(
    ("misbehaviours", "recreated"),
    [([], True), (["cdi-specs-by-device"], True), (["cdi-not-recreated"], False)],
)
def test_a_restart_writes_the_lost_cdi_specs_of_checkpointed_claims_again(
    harness, misbehaviours, recreated
):
    """A restarted container of a running pod gets no new prepare: the restarted plugin must
    bring back the specs of what its checkpoint holds, byte for byte, without the API."""
    controls = {"_all": json.dumps({"misbehaviours": misbehaviours})}
    first = harness.start(controls=controls)
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}, {"device": "fa80-1"}]))
    prepare(dra_v1_pb2_grpc.DRAPluginStub(harness.channel(first)), dra_v1_pb2, UID)
    [spec] = (harness.root / "cdi").glob(f"{DRIVER}-*.json")
    written = spec.read_text()
    harness.stop(first)
    spec.unlink()  # a reboot emptied /run; the checkpoint survived

    harness.claims.fail_reads = True
    restarted = harness.start(controls=controls)
    assert spec.exists() is recreated
    assert restarted.preparer.rewritten_specs == ([UID] if recreated else [])
    if recreated:
        assert spec.read_text() == written


def test_a_restart_leaves_present_specs_alone_and_old_checkpoints_do_no_harm(harness):
    first = harness.start()
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    prepare(dra_v1_pb2_grpc.DRAPluginStub(harness.channel(first)), dra_v1_pb2, UID)
    spec = harness.root / "cdi" / f"{DRIVER}-{UID}.json"
    mtime = spec.stat().st_mtime_ns
    harness.stop(first)
    second = harness.start()
    assert second.preparer.rewritten_specs == []
    assert spec.stat().st_mtime_ns == mtime
    harness.stop(second)

    # A checkpoint written before specs were kept in it: nothing to write the spec from.
    checkpoint = Checkpoint(second.preparer._checkpoint.path)
    claims = checkpoint.load()
    checkpoint.save({uid: replace(c, cdi_document=None) for uid, c in claims.items()})
    spec.unlink()
    assert harness.start().preparer.rewritten_specs == []
    assert not spec.exists()
