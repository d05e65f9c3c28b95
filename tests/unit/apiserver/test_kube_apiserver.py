"""The shared test API server itself: the version and DRA API the harness expects, the
admin token, namespace deletion finished by the namespace controller, and leftovers of a
killed session removed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import docker
import pytest
from kube_apiserver import control_plane
from kube_apiserver.image import apiserver_ref
from kube_apiserver.server import ApiServer
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from conformance.images.versions import NodeVersions
from conformance.kube.client import K8sClients
from conformance.kube.waits import wait_for_deleted


def test_version_and_dra_api(apiserver_k8s: K8sClients) -> None:
    assert apiserver_k8s.version.get_code().git_version == "v1.37.2"
    served = {r["name"] for r in apiserver_k8s.get_json("/apis/resource.k8s.io/v1")["resources"]}
    assert {"deviceclasses", "resourceclaims", "resourceslices", "devicetaintrules"} <= served


def test_feature_gates_match_the_e2e_cluster(apiserver_k8s: K8sClients) -> None:
    metrics = apiserver_k8s.get_raw("/metrics", accept="text/plain")
    for gate in ("DRAPartitionableDevices", "DRAConsumableCapacity", "DRADeviceBindingConditions"):
        assert f'kubernetes_feature_enabled{{name="{gate}",stage="BETA"}} 1' in metrics


def test_anonymous_requests_are_refused(kube_apiserver: ApiServer, tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_bytes(kube_apiserver.ca_pem)
    configuration = k8s.Configuration()
    configuration.host = kube_apiserver.url
    configuration.ssl_ca_cert = str(tmp_path / "ca.pem")  # also proves the CA verifies it
    with pytest.raises(ApiException) as err:
        k8s.CoreV1Api(k8s.ApiClient(configuration)).list_namespace()
    assert err.value.status == 403


def test_the_namespace_controller_finishes_deletion(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    apiserver_k8s.core.create_namespaced_config_map(api_namespace, {"metadata": {"name": "x"}})
    apiserver_k8s.core.delete_namespace(api_namespace)

    def read() -> object:
        try:
            return apiserver_k8s.core.read_namespace(api_namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    wait_for_deleted(read, describe=f"namespace {api_namespace}", timeout=180)


def test_leftovers_of_a_killed_session_are_removed(kube_apiserver: ApiServer) -> None:
    client = docker.from_env()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], stdout=-1)
    dead_pid = dead.stdout.decode().strip()
    labels = {control_plane.OWNER_LABEL: dead_pid}
    image = apiserver_ref(NodeVersions(kubernetes="v1.37.2"))
    network = client.networks.create(f"dra-test-stale-{os.getpid()}", labels=labels)
    container = client.containers.create(image, ["true"], labels=labels, network=network.name)
    ours = client.containers.list(filters={"label": f"{control_plane.OWNER_LABEL}={os.getpid()}"})
    assert ours, "the session's own containers carry the owner label"
    removed = control_plane.remove_stale(client)
    assert container.name in removed and network.name in removed
    assert (
        client.containers.list(filters={"label": f"{control_plane.OWNER_LABEL}={os.getpid()}"})
        == ours
    )  # a live session's containers stay


def _ours(client: docker.DockerClient) -> set[str]:
    owner = f"{control_plane.OWNER_LABEL}={os.getpid()}"
    return {c.id for c in client.containers.list(all=True, filters={"label": owner})} | {
        n.id for n in client.networks.list(filters={"label": owner})
    }


def test_a_failed_start_fails_at_once_and_leaves_nothing(
    kube_apiserver: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = docker.from_env()
    before = _ours(client)  # the session's own server stays
    refused = [*control_plane.apiserver_command("v1.37.2"), "--no-such-flag"]
    monkeypatch.setattr(control_plane, "apiserver_command", lambda version: refused)
    image = apiserver_ref(NodeVersions(kubernetes="v1.37.2"))
    with (
        pytest.raises(
            control_plane.StartFailed, match="kube-apiserver exited; its last log"
        ) as err,
        control_plane.control_plane(image, "v1.37.2"),
    ):
        pass
    assert "unknown flag: --no-such-flag" in str(err.value)
    assert _ours(client) == before


def test_apiserver_flags_carry_the_dra_gates() -> None:
    command = control_plane.apiserver_command("v1.37.2")
    gates = next(f for f in command if f.startswith("--feature-gates="))
    assert "DRAConsumableCapacity=true" in gates
    assert not any(f.startswith("--runtime-config=") for f in command)  # 1.37: all in v1
