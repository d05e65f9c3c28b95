"""The liveness probe (GET /livez) against the driver's own gRPC servers on real unix sockets."""

from __future__ import annotations

import json
import logging
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from fakedriver import ready
from fakedriver.driver import FakeDriver
from fakedriver.grpcapi import drahealth_v1_pb2, drahealth_v1_pb2_grpc
from fakedriver.grpcapi import pluginregistration_v1_pb2 as reg_pb2
from fakedriver.grpcapi import pluginregistration_v1_pb2_grpc as reg_grpc
from fakedriver.liveness import LivenessCheck

from unit.fakedriver.conftest import DriverHarness


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _check(driver: FakeDriver, deadline: float = 10.0) -> LivenessCheck:
    # A generous deadline where the test expects an answer: the machine may be loaded.
    return LivenessCheck(
        driver.options.registration_socket,  # type: ignore[arg-type]
        driver.options.dra_socket,  # type: ignore[arg-type]
        dra_version=driver.options.dra_versions[0],
        excused=driver.registration_excuse,
        deadline=deadline,
    )


@pytest.fixture
def probe(harness: DriverHarness) -> Iterator[tuple[FakeDriver, int]]:
    driver = harness.start()
    server = ready.ReadinessServer(
        0, driver.options.ready_file, host="127.0.0.1", liveness=_check(driver).check
    ).start()
    yield driver, server.port
    server.stop()


def _misbehave(driver: FakeDriver, name: str, revision: str) -> None:
    driver.apply_controls({"_all": json.dumps({"misbehaviours": {name: True}})}, revision)


def test_a_healthy_plugin_is_alive(probe):
    driver, port = probe
    code, body = _get(port, "/livez")
    assert (code, body.strip()) == (
        200,
        "alive: the DRA socket answered NodePrepareResources, the registration socket GetInfo",
    )
    # Liveness does not wait for the kubelet: readiness does.
    assert _get(port, "/readyz")[0] == 503


def test_a_missing_registration_socket_is_named(probe):
    driver, port = probe
    driver.options.registration_socket.unlink()
    code, body = _get(port, "/livez")
    assert code == 503
    assert body.strip() == (
        f"not alive: registration socket {driver.options.registration_socket}: "
        "missing (no socket file)"
    )


def test_a_stopped_dra_server_is_named(probe, harness):
    driver, port = probe
    harness.stop(driver)  # the registration server stops too, and both files go
    code, body = _get(port, "/livez")
    assert code == 503 and len(body.strip().splitlines()) == 1
    assert f"DRA socket {driver.options.dra_socket}: missing" in body
    assert f"registration socket {driver.options.registration_socket}: missing" in body


def test_a_socket_file_nobody_serves_fails_with_the_grpc_error(harness, short_tmp):
    driver = harness.start()
    stale = short_tmp / "stale.sock"
    with socket.socket(socket.AF_UNIX) as left_behind:  # bound, never listening
        left_behind.bind(str(stale))
        check = LivenessCheck(driver.options.registration_socket, stale, deadline=10.0)
        ok, message = check.check()
    assert not ok
    assert message.startswith(f"not alive: DRA socket {stale}: NodePrepareResources failed: ")
    assert "UNAVAILABLE" in message and "\n" not in message


def test_a_dra_server_without_a_free_worker_times_out(harness):
    # One worker, held by a health stream: the server accepts the call but never runs it.
    driver = harness.start(grpc_workers=1)
    stub = drahealth_v1_pb2_grpc.DRAResourceHealthStub(harness.channel(driver))
    stream = stub.NodeWatchResources(drahealth_v1_pb2.NodeWatchResourcesRequest(), timeout=60)
    next(stream)
    try:
        ok, message = _check(driver, deadline=1.0).check()
    finally:
        stream.cancel()
    assert not ok
    assert f"DRA socket {driver.options.dra_socket}: NodePrepareResources failed: " in message
    assert "DEADLINE_EXCEEDED" in message
    assert "registration socket" not in message


def test_a_slow_prepare_fault_does_not_slow_the_probe_nor_count(harness):
    controls = {"_all": json.dumps({"prepareDelaySeconds": 30})}
    driver = harness.start(controls=controls)
    ok, message = _check(driver, deadline=5.0).check()
    assert ok, message
    assert driver.preparer.prepare_stats.snapshot()["calls"] == 0


def test_a_registration_withheld_on_purpose_is_alive(harness):
    driver = harness.start()
    _misbehave(driver, "unregistered", "2")
    assert not driver.options.registration_socket.exists()
    ok, message = _check(driver).check()
    assert ok, message
    assert "registration socket not required (misbehaviour unregistered)" in message


def test_a_registration_refused_on_purpose_is_alive(harness):
    driver = harness.start()
    _misbehave(driver, "register-once", "2")
    stub = reg_grpc.RegistrationStub(harness.channel(driver, registration=True))
    stub.NotifyRegistrationStatus(reg_pb2.RegistrationStatus(plugin_registered=True), timeout=60)
    ok, message = _check(driver).check()
    assert ok, message
    assert "registration socket not required (misbehaviour register-once" in message


def test_the_probe_is_not_logged_as_the_kubelet(harness, caplog):
    driver = harness.start()
    with caplog.at_level(logging.DEBUG, logger="fakedriver.services"):
        assert _check(driver).check()[0]
    messages = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert [m for level, m in messages if "GetInfo" in m and level > logging.DEBUG] == []
    assert any(m.startswith("liveness probe GetInfo") for _, m in messages), messages


def test_without_a_check_there_is_no_livez(harness):
    driver = harness.start()
    server = ready.ReadinessServer(0, driver.options.ready_file, host="127.0.0.1").start()
    try:
        code, body = _get(server.port, "/livez")
    finally:
        server.stop()
    assert code == 404 and "/readyz" in body


def test_an_unknown_dra_version_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown DRA API version 'v2'"):
        LivenessCheck(tmp_path / "reg.sock", tmp_path / "dra.sock", dra_version="v2")
