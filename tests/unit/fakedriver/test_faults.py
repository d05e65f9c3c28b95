"""Fault controls and misbehaviours as seen through prepare, slices and status."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from fakedriver.grpcapi import dra_v1_pb2, dra_v1_pb2_grpc

from unit.fakedriver.conftest import DRIVER, NODE, make_claim
from unit.fakedriver.test_prepare import UID, UID2, prepare, unprepare


def _controls(**node) -> dict[str, str]:
    return {NODE: json.dumps(node)}


def _stub(harness, driver):
    return dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))


def _slice_devices(harness) -> dict[str, dict]:
    return {
        d["name"]: d
        for o in harness.slices.objects.values()
        for d in o["spec"].get("devices") or []
    }


def _generations(harness) -> set[int]:
    return {o["spec"]["pool"]["generation"] for o in harness.slices.objects.values()}


def test_fail_next_n_prepares_on_the_node(harness):
    driver = harness.start(controls=_controls(failPrepare={"id": "f1", "count": 2}))
    stub = _stub(harness, driver)
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    errors = [prepare(stub, dra_v1_pb2, UID).claims[UID].error for _ in range(3)]
    assert errors == [
        "injected prepare failure (node, 1 of 2)",
        "injected prepare failure (node, 2 of 2)",
        "",
    ]
    assert driver.faults.remaining_failures() == {"f1": 0}
    # A restart does not refill the budget of the same fault id.
    harness.stop(driver)
    again = harness.start(controls=_controls(failPrepare={"id": "f1", "count": 2}))
    harness.claims.add(make_claim(UID2, [{"device": "fa80-1"}]))
    assert prepare(_stub(harness, again), dra_v1_pb2, UID2).claims[UID2].error == ""


def test_fail_every_prepare_of_one_device(harness):
    controls = _controls(devices={"fa80-1": {"failPrepare": {"id": "f2", "always": True}}})
    driver = harness.start(controls=controls)
    stub = _stub(harness, driver)
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fa80-1"}]))
    for _ in range(2):
        response = prepare(stub, dra_v1_pb2, UID, UID2)
        assert response.claims[UID].error == ""
        assert (
            response.claims[UID2].error == "injected prepare failure (device fa80-1, every prepare)"
        )
    driver.apply_controls({}, "9")
    assert prepare(stub, dra_v1_pb2, UID2).claims[UID2].error == ""


def test_delay_prepare(harness):
    driver = harness.start(controls=_controls(prepareDelaySeconds=0.4))
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    started = time.monotonic()
    assert prepare(_stub(harness, driver), dra_v1_pb2, UID).claims[UID].error == ""
    assert time.monotonic() - started >= 0.4
    assert driver.preparer.prepare_stats.snapshot()["latencySeconds"]["max"] >= 0.4


def test_withdraw_and_restore_republish(harness):
    driver = harness.start()
    assert "fa80-1" in _slice_devices(harness)
    assert _generations(harness) == {1}
    driver.apply_controls(_controls(devices={"fa80-1": {"withdrawn": True}}), "2")
    assert set(_slice_devices(harness)) == {"fa80-0", "ff16-0", "fs32-0", "fx-0"}
    assert _generations(harness) == {2}
    harness.claims.add(make_claim(UID, [{"device": "fa80-1"}]))
    error = prepare(_stub(harness, driver), dra_v1_pb2, UID).claims[UID].error
    assert error == f"device fa80-1 was withdrawn from pool {NODE}"
    driver.apply_controls({}, "3")
    assert set(_slice_devices(harness)) == {"fa80-0", "fa80-1", "ff16-0", "fs32-0", "fx-0"}
    assert _generations(harness) == {3}


def test_keep_withdrawn_device_misbehaviour(harness):
    driver = harness.start()
    driver.apply_controls(
        _controls(
            devices={"fa80-1": {"withdrawn": True}}, misbehaviours={"keep-withdrawn-device": True}
        ),
        "2",
    )
    assert "fa80-1" in _slice_devices(harness)  # the lie: still published
    driver.status.flush()
    assert harness.sink.documents[-1]["applied"]["devices"]["fa80-1"] == {"withdrawn": True}


def test_taints_are_published_with_a_stable_time_added(harness):
    driver = harness.start()
    taint = {"key": "fake.dra-conformance.io/broken", "value": "yes", "effect": "NoExecute"}
    driver.apply_controls(_controls(devices={"fa80-0": {"taints": [taint]}}), "2")
    published = _slice_devices(harness)["fa80-0"]["taints"]
    assert [{k: v for k, v in t.items() if k != "timeAdded"} for t in published] == [taint]
    added = published[0]["timeAdded"]
    assert added.endswith("Z")
    time.sleep(1.1)
    driver.apply_controls(
        _controls(devices={"fa80-0": {"taints": [taint]}, "fa80-1": {"withdrawn": True}}), "3"
    )
    assert _slice_devices(harness)["fa80-0"]["taints"][0]["timeAdded"] == added
    driver.apply_controls({}, "4")
    assert "taints" not in _slice_devices(harness)["fa80-0"]


def test_status_document(harness):
    driver = harness.start(
        controls=_controls(prepareDelaySeconds=0.01, failPrepare={"id": "z", "count": 1})
    )
    stub = _stub(harness, driver)
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    prepare(stub, dra_v1_pb2, UID)
    prepare(stub, dra_v1_pb2, UID)
    driver.apply_controls({**_controls(devices={"nope": {"withdrawn": True}}), "_all": "[1"}, "17")
    driver.status.flush()
    status = harness.sink.documents[-1]
    assert status["node"] == NODE and status["driver"] == DRIVER
    assert status["observedControlResourceVersion"] == "17"
    assert status["unknownDevices"] == ["nope"]
    assert any(e.startswith("_all:") for e in status["controlErrors"])
    assert status["preparedClaims"] == 1 and status["preparedClaimUIDs"] == [UID]
    assert status["prepare"]["calls"] == 2 and status["prepare"]["failures"] == 1
    assert status["prepare"]["latencySeconds"]["count"] == 2
    # Controls changed but the slices' content did not: no generation bump.
    assert status["pool"]["generation"] == 1
    assert status["pool"]["resourceSliceCount"] == 1
    assert status["pool"]["publishedDevices"] == ["fa80-0", "fa80-1", "ff16-0", "fs32-0", "fx-0"]
    assert status["health"] == dict.fromkeys(
        ("fa80-0", "fa80-1", "ff16-0", "fs32-0", "fx-0"), "Healthy"
    )
    assert status["supportedVersions"][0] == "v1.DRAPlugin"


def test_skip_claim_in_prepare(harness):
    driver = harness.start(
        controls={"_all": json.dumps({"misbehaviours": ["skip-claim-in-prepare"]})}
    )
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    harness.claims.add(make_claim(UID2, [{"device": "fa80-1"}]))
    assert set(prepare(_stub(harness, driver), dra_v1_pb2, UID, UID2).claims) == {UID}


def test_noop_unprepare(harness):
    driver = harness.start(controls={"_all": json.dumps({"misbehaviours": ["noop-unprepare"]})})
    stub = _stub(harness, driver)
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    prepare(stub, dra_v1_pb2, UID)
    assert unprepare(stub, dra_v1_pb2, UID).claims[UID].error == ""
    assert (harness.root / "cdi" / f"{DRIVER}-{UID}.json").exists()
    assert UID in driver.preparer.prepared()


def test_fail_unprepare(harness):
    driver = harness.start(controls={"_all": json.dumps({"misbehaviours": ["fail-unprepare"]})})
    stub = _stub(harness, driver)
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    prepare(stub, dra_v1_pb2, UID)
    error = unprepare(stub, dra_v1_pb2, UID).claims[UID].error
    assert error == "misbehaviour fail-unprepare: device still busy"
    assert (harness.root / "cdi" / f"{DRIVER}-{UID}.json").exists()
    assert UID in driver.preparer.prepared()


def test_taint_prepared_devices(harness):
    driver = harness.start(
        controls={"_all": json.dumps({"misbehaviours": ["taint-prepared-devices"]})}
    )
    stub = _stub(harness, driver)

    def taints() -> dict[str, list]:
        return {
            d["name"]: d.get("taints", [])
            for o in harness.slices.objects.values()
            for d in o["spec"].get("devices") or []
        }

    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    prepare(stub, dra_v1_pb2, UID)
    assert taints()["fa80-0"] == [{"key": "fake.dra-conformance.io/in-use", "effect": "NoExecute"}]
    assert taints()["fa80-1"] == []
    unprepare(stub, dra_v1_pb2, UID)
    assert taints()["fa80-0"] == []


def test_cdi_wrong_device(harness):
    driver = harness.start(controls={"_all": json.dumps({"misbehaviours": ["cdi-wrong-device"]})})
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    device = prepare(_stub(harness, driver), dra_v1_pb2, UID).claims[UID].devices[0]
    assert device.device_name == "fa80-0"  # the response still claims the right device
    spec = json.loads((harness.root / "cdi" / f"{DRIVER}-{UID}.json").read_text())
    env = spec["devices"][0]["containerEdits"]["env"]
    assert f"DRA_ASSIGNED_FA80_1={NODE}/fa80-1" in env
    assert not any(e.startswith("DRA_ASSIGNED_FA80_0=") for e in env)


def _env_of(harness, uid) -> list[str]:
    spec = json.loads((harness.root / "cdi" / f"{DRIVER}-{uid}.json").read_text())
    return [v for d in spec["devices"] for v in d["containerEdits"]["env"]]


def test_cdi_first_device_only(harness):
    driver = harness.start(
        controls={"_all": json.dumps({"misbehaviours": ["cdi-first-device-only"]})}
    )
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}, {"device": "fa80-1"}]))
    result = prepare(_stub(harness, driver), dra_v1_pb2, UID).claims[UID]
    assert [d.device_name for d in result.devices] == ["fa80-0"]
    assigned = [v for v in _env_of(harness, UID) if v.startswith("DRA_ASSIGNED_")]
    assert assigned == [f"DRA_ASSIGNED_FA80_0={NODE}/fa80-0"]


class _HeldTimer:
    """A threading.Timer that goes off when the test says, not when a loaded machine gets to
    it (a real one could rewrite the spec before the test has read it the first time)."""

    def __init__(self, interval: float, function: Callable[[], None]) -> None:
        self.interval, self.function = interval, function
        self.daemon = False
        self.started = False

    def start(self) -> None:
        self.started = True

    def fire(self) -> None:
        assert self.started
        self.function()


class _ThreadingWithHeldTimers:
    """The threading module as fakedriver.prepare sees it, but its Timers are held."""

    def __init__(self) -> None:
        self.timers: list[_HeldTimer] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(threading, name)

    def Timer(self, interval: float, function: Callable[[], None]) -> _HeldTimer:  # noqa: N802
        self.timers.append(_HeldTimer(interval, function))
        return self.timers[-1]


def test_unstable_cdi_spec_names_another_device_after_a_while(harness, monkeypatch):
    from fakedriver.misbehave import cdi as cdi_hooks

    held = _ThreadingWithHeldTimers()
    monkeypatch.setattr(cdi_hooks, "threading", held)
    driver = harness.start(controls={"_all": json.dumps({"misbehaviours": ["unstable-cdi-spec"]})})
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    prepare(_stub(harness, driver), dra_v1_pb2, UID)
    assert f"DRA_ASSIGNED_FA80_0={NODE}/fa80-0" in _env_of(harness, UID)  # right at first
    (timer,) = held.timers
    assert timer.interval == cdi_hooks.UNSTABLE_CDI_DELAY_S > 0 and timer.daemon
    timer.fire()  # "a while" later
    assert f"DRA_ASSIGNED_FA80_1={NODE}/fa80-1" in _env_of(harness, UID)
    assert not any(v.startswith("DRA_ASSIGNED_FA80_0=") for v in _env_of(harness, UID))


def test_phantom_device_is_published_but_cannot_be_prepared(harness):
    driver = harness.start(controls={"_all": json.dumps({"misbehaviours": ["phantom-device"]})})
    assert "fa80-0-ghost" in _slice_devices(harness)
    harness.claims.add(make_claim(UID, [{"device": "fa80-0-ghost"}]))
    error = prepare(_stub(harness, driver), dra_v1_pb2, UID).claims[UID].error
    assert "fa80-0-ghost is not a device of pool" in error


def test_unregistered_removes_and_restores_the_registration_socket(harness):
    driver = harness.start(controls={"_all": json.dumps({"misbehaviours": ["unregistered"]})})
    socket = driver.options.registration_socket
    assert not socket.exists()
    assert driver.options.dra_socket.exists()  # the DRA service itself keeps serving
    driver.apply_controls({}, "2")
    assert socket.exists()
    harness.channel(driver, registration=True).close()
    driver.apply_controls({"_all": json.dumps({"misbehaviours": ["unregistered"]})}, "3")
    assert not socket.exists()


def _published_health(harness, driver) -> tuple[str, list[str]]:
    """fa80-0's health as the status reports it and its published taint keys."""
    driver.status.flush()
    health = harness.sink.documents[-1]["health"]["fa80-0"]
    taints = _slice_devices(harness)["fa80-0"].get("taints") or []
    return health, [f"{t['key']}:{t['effect']}" for t in taints]


UNHEALTHY = "fake.dra-conformance.io/unhealthy:NoSchedule"


def test_an_unhealthy_device_is_tainted_until_it_recovers(harness):
    driver = harness.start()
    driver.apply_controls(_controls(devices={"fa80-0": {"health": "Unhealthy"}}), "2")
    assert _published_health(harness, driver) == ("Unhealthy", [UNHEALTHY])
    driver.apply_controls({}, "3")
    assert _published_health(harness, driver) == ("Healthy", [])
    # The ConfigMap's controls stay what was written: the taint is the driver's own doing.
    assert harness.sink.documents[-1]["applied"]["devices"] == {}


def test_sticky_unhealthy_keeps_health_and_taint_after_recovery(harness):
    sticky = {"misbehaviours": {"sticky-unhealthy": True}}
    driver = harness.start()
    driver.apply_controls(_controls(devices={"fa80-0": {"health": "Unhealthy"}}, **sticky), "2")
    driver.apply_controls(_controls(**sticky), "3")
    assert _published_health(harness, driver) == ("Unhealthy", [UNHEALTHY])
    driver.apply_controls({}, "4")  # switched off: what it remembered is forgotten
    assert _published_health(harness, driver) == ("Healthy", [])
