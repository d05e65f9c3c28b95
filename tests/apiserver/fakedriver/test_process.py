"""The real driver process (`python3 -m fakedriver`) against the real test API server:
start-up order, slices over REST, control channel, SIGTERM clean-up."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import grpc
import tenacity
from fakedriver.grpcapi import pluginregistration_v1_pb2 as reg_pb2
from fakedriver.grpcapi import pluginregistration_v1_pb2_grpc as reg_grpc
from kube_apiserver.server import ApiServer, ClusterScoped, unique_name
from kubernetes.client.exceptions import ApiException
from unit.fakedriver.conftest import DRIVER, FAKE_DIR

from conformance.kube.client import K8sClients


def _eventually(read: Any, what: str, timeout: float = 180) -> Any:
    """Poll `read` until it returns something truthy (generous: a loaded machine takes a
    while to start a Python process that imports the kubernetes client)."""
    for attempt in tenacity.Retrying(
        stop=tenacity.stop_after_delay(timeout), wait=tenacity.wait_fixed(0.2), reraise=True
    ):
        with attempt:
            value = read()
            assert value, f"timed out waiting for {what}"
    return value


def test_driver_process_end_to_end(
    kube_apiserver: ApiServer,
    apiserver_k8s: K8sClients,
    api_namespace: str,
    cluster_scoped: ClusterScoped,
    short_tmp: Path,
) -> None:
    node = unique_name("fd") + "-worker"  # "*-worker" in the catalog
    registered = cluster_scoped.create(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}
    )
    ready_file = short_tmp / "ready.json"
    with socket.socket() as probe:  # a free port for the HTTP readiness server
        probe.bind(("127.0.0.1", 0))
        ready_port = probe.getsockname()[1]
    args = [
        sys.executable,
        "-m",
        "fakedriver",
        "--node-name",
        node,
        "--kubeconfig",
        str(kube_apiserver.kubeconfig),
        "--control-namespace",
        api_namespace,
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
        "--ready-port",
        str(ready_port),
    ]
    env = {**os.environ, "PYTHONPATH": str(FAKE_DIR)}
    proc = subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    reg_socket = short_tmp / "reg" / f"{DRIVER}-reg.sock"
    resource = apiserver_k8s.resource

    def node_slices() -> list[dict[str, Any]]:
        listing = resource.list_resource_slice(field_selector=f"spec.nodeName={node}")
        return [apiserver_k8s.to_dict(s) for s in listing.items]

    try:
        slices = _eventually(node_slices, "the driver's slices")
        # The owner is the Node object the server stored, found by the driver.
        assert slices[0]["metadata"]["ownerReferences"][0]["uid"] == registered["metadata"]["uid"]
        assert {d["name"] for d in slices[0]["spec"]["devices"]} == {
            "fa80-0",
            "fa80-1",
            "ff16-0",
            "fs32-0",
            "fx-0",  # the fabric device, with binding conditions
        }
        _eventually(reg_socket.exists, "the registration socket")

        channel = grpc.insecure_channel(f"unix://{reg_socket}")
        stub = reg_grpc.RegistrationStub(channel)
        assert stub.GetInfo(reg_pb2.InfoRequest(), timeout=60).endpoint == str(
            short_tmp / "plug" / "dra.sock"
        )
        stub.NotifyRegistrationStatus(
            reg_pb2.RegistrationStatus(plugin_registered=True), timeout=60
        )
        channel.close()
        ready = [sys.executable, "-m", "fakedriver.ready", "--ready-file", str(ready_file)]
        assert subprocess.run(ready, env=env).returncode == 0
        url = f"http://127.0.0.1:{ready_port}/readyz"
        with urllib.request.urlopen(url, timeout=60) as answer:  # the DaemonSet's probe
            assert answer.status == 200
        # Liveness: the process dials its own two sockets and both answer.
        live = f"http://127.0.0.1:{ready_port}/livez"
        with urllib.request.urlopen(live, timeout=60) as answer:
            assert (answer.status, answer.read().decode().split(":")[0]) == (200, "alive")

        # A fault through the control ConfigMap: republished and reported.
        control = apiserver_k8s.core.create_namespaced_config_map(
            api_namespace,
            {
                "metadata": {"name": "fake-dra-control"},
                "data": {node: json.dumps({"devices": {"fa80-1": {"withdrawn": True}}})},
            },
        )
        rv = control.metadata.resource_version

        def applied() -> dict[str, Any] | None:
            try:
                cm = apiserver_k8s.core.read_namespaced_config_map(
                    f"fake-dra-status-{node}", api_namespace
                )
            except ApiException as exc:
                if exc.status == 404:
                    return None
                raise
            status = json.loads(cm.data["status.json"])
            return status if status.get("observedControlResourceVersion") == rv else None

        status = _eventually(applied, "the driver to report the control change")
        assert status["registered"] is True
        assert status["pool"]["publishedDevices"] == ["fa80-0", "ff16-0", "fs32-0", "fx-0"]
        assert status["pool"]["generation"] == 2
        current = node_slices()
        assert {d["name"] for d in current[0]["spec"]["devices"]} == {
            "fa80-0",
            "ff16-0",
            "fs32-0",
            "fx-0",
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=120)
        resource.delete_collection_resource_slice(field_selector=f"spec.nodeName={node}")
    assert proc.returncode == 0, output
    assert "received SIGTERM" in output
    assert not reg_socket.exists()
    assert not (short_tmp / "plug" / "dra.sock").exists()
    assert not ready_file.exists()
    # Timestamped log lines on stdout.
    assert output.splitlines()[0][:4].isdigit() and "Z INFO" in output.splitlines()[0]
