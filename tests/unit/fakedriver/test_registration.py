"""Plugin registration over the real registration socket, and readiness."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from fakedriver import ready
from fakedriver.grpcapi import (
    drahealth_v1_pb2,
    drahealth_v1_pb2_grpc,
    drahealth_v1alpha1_pb2,
    drahealth_v1alpha1_pb2_grpc,
)
from fakedriver.grpcapi import pluginregistration_v1_pb2 as reg_pb2
from fakedriver.grpcapi import pluginregistration_v1_pb2_grpc as reg_grpc

from unit.fakedriver.conftest import DRIVER


def test_registration_socket_follows_kubelet_naming(harness):
    driver = harness.start()
    assert driver.options.registration_socket == harness.root / "reg" / f"{DRIVER}-reg.sock"
    assert driver.options.dra_socket == harness.root / "plug" / "dra.sock"
    assert driver.options.registration_socket.is_socket()
    assert driver.options.dra_socket.is_socket()


def test_get_info(harness):
    driver = harness.start()
    stub = reg_grpc.RegistrationStub(harness.channel(driver, registration=True))
    info = stub.GetInfo(reg_pb2.InfoRequest(), timeout=60)
    assert info.type == "DRAPlugin"
    assert info.name == DRIVER
    assert info.endpoint == str(driver.options.dra_socket)
    # The 1.37 kubelet picks the first DRA service it knows, so v1 leads.
    assert list(info.supported_versions) == [
        "v1.DRAPlugin",
        "v1beta1.DRAPlugin",
        "v1.DRAResourceHealth",
        "v1alpha1.DRAResourceHealth",
    ]


def test_versions_are_configurable(harness):
    driver = harness.start(dra_versions=("v1beta1",), health_versions=())
    stub = reg_grpc.RegistrationStub(harness.channel(driver, registration=True))
    assert list(stub.GetInfo(reg_pb2.InfoRequest(), timeout=60).supported_versions) == [
        "v1beta1.DRAPlugin"
    ]


def test_ready_only_after_registration_and_publish(harness):
    driver = harness.start()
    ok, message = ready.check(driver.options.ready_file)
    assert not ok and "registered" in message
    assert json.loads(driver.options.ready_file.read_text())["published"] is True
    stub = reg_grpc.RegistrationStub(harness.channel(driver, registration=True))
    stub.NotifyRegistrationStatus(reg_pb2.RegistrationStatus(plugin_registered=True), timeout=60)
    assert ready.check(driver.options.ready_file)[0]
    assert ready.main(["--ready-file", str(driver.options.ready_file)]) == 0


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_http_readiness_follows_the_marker(harness):
    # What the DaemonSet's HTTP probe sees: 503 with the reason until the kubelet confirmed
    # registration, then 200; 503 again once the plugin stopped (marker removed).
    driver = harness.start()
    server = ready.ReadinessServer(0, driver.options.ready_file, host="127.0.0.1").start()
    try:
        code, body = _get(server.port, "/readyz")
        assert code == 503 and "registered" in body
        stub = reg_grpc.RegistrationStub(harness.channel(driver, registration=True))
        stub.NotifyRegistrationStatus(
            reg_pb2.RegistrationStatus(plugin_registered=True), timeout=60
        )
        assert _get(server.port, "/readyz")[0] == 200
        assert _get(server.port, "/healthz")[0] == 404
        driver.stop()
        code, body = _get(server.port, "/readyz")
        assert code == 503 and "does not exist" in body
    finally:
        server.stop()


def test_rejected_registration_is_not_ready(harness):
    driver = harness.start()
    stub = reg_grpc.RegistrationStub(harness.channel(driver, registration=True))
    stub.NotifyRegistrationStatus(
        reg_pb2.RegistrationStatus(plugin_registered=False, error="bad version"), timeout=60
    )
    assert not ready.check(driver.options.ready_file)[0]
    driver.status.flush()
    assert harness.sink.documents[-1]["registrationError"] == "bad version"


def test_stop_removes_sockets_and_marker(harness):
    driver = harness.start()
    stub = reg_grpc.RegistrationStub(harness.channel(driver, registration=True))
    stub.NotifyRegistrationStatus(reg_pb2.RegistrationStatus(plugin_registered=True), timeout=60)
    harness.stop(driver)
    assert not driver.options.registration_socket.exists()
    assert not driver.options.dra_socket.exists()
    assert not driver.options.ready_file.exists()
    assert ready.main(["--ready-file", str(driver.options.ready_file)]) == 1


def _advertised(harness, driver) -> list[str]:
    stub = reg_grpc.RegistrationStub(harness.channel(driver, registration=True))
    return list(stub.GetInfo(reg_pb2.InfoRequest(), timeout=60).supported_versions)


def _misbehave(driver, name: str, revision: str) -> None:
    driver.apply_controls({"_all": json.dumps({"misbehaviours": {name: True}})}, revision)


def test_health_not_advertised_registers_again_without_the_health_services(harness):
    driver = harness.start()
    socket = driver.options.registration_socket
    before = socket.stat().st_ctime_ns
    _misbehave(driver, "health-not-advertised", "2")
    # A new socket: the kubelet reads the versions only when it sees a socket appear.
    assert socket.stat().st_ctime_ns != before  # the inode number may be reused
    assert _advertised(harness, driver) == ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
    assert driver.status_document()["supportedVersions"] == ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
    # still served: only the advertisement is missing
    stub = drahealth_v1_pb2_grpc.DRAResourceHealthStub(harness.channel(driver))
    stream = stub.NodeWatchResources(drahealth_v1_pb2.NodeWatchResourcesRequest(), timeout=60)
    assert len(next(stream).devices) == 5
    stream.cancel()


def test_health_v1alpha1_only_advertises_the_older_health_service(harness):
    driver = harness.start()
    _misbehave(driver, "health-v1alpha1-only", "2")
    assert _advertised(harness, driver) == [
        "v1.DRAPlugin",
        "v1beta1.DRAPlugin",
        "v1alpha1.DRAResourceHealth",
    ]


def test_unchanged_versions_keep_the_socket(harness):
    driver = harness.start()
    before = driver.options.registration_socket.stat().st_ctime_ns
    _misbehave(driver, "noop-unprepare", "2")
    assert driver.options.registration_socket.stat().st_ctime_ns == before


def test_open_health_streams_show_in_the_status_by_api_version(harness):
    driver = harness.start()
    assert driver.status_document()["healthStreams"] == {}
    stub = drahealth_v1alpha1_pb2_grpc.DRAResourceHealthStub(harness.channel(driver))
    stream = stub.NodeWatchResources(drahealth_v1alpha1_pb2.NodeWatchResourcesRequest(), timeout=60)
    next(stream)
    assert driver.status_document()["healthStreams"] == {"v1alpha1": 1}
    stream.cancel()
    deadline = time.monotonic() + 30  # the server notices the cancel within a second or so
    while driver.status_document()["healthStreams"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert driver.status_document()["healthStreams"] == {}
