"""The real driver process (`python3 -m fakedriver`) against the in-memory API
server: start-up order, slices over REST, control channel, SIGTERM clean-up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import grpc
import pytest
from conftest import DRIVER, FAKE_DIR, NODE
from fakeapi import FakeApiServer
from fakedriver.grpcapi import pluginregistration_v1_pb2 as reg_pb2
from fakedriver.grpcapi import pluginregistration_v1_pb2_grpc as reg_grpc

NS = "dra-fake-driver"


@pytest.fixture
def api():
    server = FakeApiServer().start()
    server.put(
        "node",
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "uid": "node-uid-7"}},
    )
    yield server
    server.stop()


def test_driver_process_end_to_end(api, short_tmp):
    ready_file = short_tmp / "ready.json"
    args = [
        sys.executable,
        "-m",
        "fakedriver",
        "--node-name",
        NODE,
        "--kubeconfig",
        str(api.kubeconfig(short_tmp / "kubeconfig")),
        "--catalog",
        str(FAKE_DIR / "catalog.yaml"),
        "--plugin-registration-dir",
        str(short_tmp / "reg"),
        "--plugin-data-dir",
        str(short_tmp / "plug"),
        "--cdi-dir",
        str(short_tmp / "cdi"),
        "--ready-file",
        str(ready_file),
        "--health-interval",
        "1",
    ]
    env = {**os.environ, "PYTHONPATH": str(FAKE_DIR)}
    proc = subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    reg_socket = short_tmp / "reg" / f"{DRIVER}-reg.sock"
    try:
        slices = api.wait_for(lambda: api.items("slice"))
        assert slices[0]["metadata"]["ownerReferences"][0]["uid"] == "node-uid-7"
        assert {d["name"] for d in slices[0]["spec"]["devices"]} == {"fa80-0", "fa80-1", "ff16-0"}
        api.wait_for(reg_socket.exists)

        channel = grpc.insecure_channel(f"unix://{reg_socket}")
        stub = reg_grpc.RegistrationStub(channel)
        assert stub.GetInfo(reg_pb2.InfoRequest(), timeout=10).endpoint == str(
            short_tmp / "plug" / "dra.sock"
        )
        stub.NotifyRegistrationStatus(
            reg_pb2.RegistrationStatus(plugin_registered=True), timeout=10
        )
        channel.close()
        assert (
            subprocess.run(
                [sys.executable, "-m", "fakedriver.ready", "--ready-file", str(ready_file)], env=env
            ).returncode
            == 0
        )

        # A fault through the control ConfigMap: republished and reported.
        control = api.put(
            "configmap",
            {
                "metadata": {"name": "fake-dra-control", "namespace": NS},
                "data": {NODE: json.dumps({"devices": {"fa80-1": {"withdrawn": True}}})},
            },
        )
        rv = control["metadata"]["resourceVersion"]

        def applied():
            cm = api.get("configmap", f"fake-dra-status-{NODE}", NS)
            status = json.loads(cm["data"]["status.json"]) if cm else {}
            return status if status.get("observedControlResourceVersion") == rv else None

        status = api.wait_for(applied)
        assert status["registered"] is True
        assert status["pool"]["publishedDevices"] == ["fa80-0", "ff16-0"]
        assert status["pool"]["generation"] == 2
        current = api.items("slice")
        assert {d["name"] for d in current[0]["spec"]["devices"]} == {"fa80-0", "ff16-0"}
        assert all(r["authorization"] == "Bearer test-token" for r in api.requests)
    finally:
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, output
    assert "received SIGTERM" in output
    assert not reg_socket.exists()
    assert not (short_tmp / "plug" / "dra.sock").exists()
    assert not ready_file.exists()
    # Timestamped log lines on stdout.
    assert output.splitlines()[0][:4].isdigit() and "Z INFO" in output.splitlines()[0]
