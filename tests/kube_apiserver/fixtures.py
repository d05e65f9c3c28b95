"""Pytest fixtures: one real API server per test session, a namespace and a cluster-scoped
object tracker per test."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kubernetes.client.exceptions import ApiException

from conformance.kube.client import K8sClients
from kube_apiserver.control_plane import control_plane
from kube_apiserver.image import KUBERNETES, ensure_component_image
from kube_apiserver.server import ApiServer, ClusterScoped, unique_name, write_kubeconfig


@pytest.fixture(scope="session")
def kube_apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """etcd + kube-apiserver v1.37.2 (+ the namespace controller) in containers; removed at
    session end, also when the session fails."""
    begin = time.monotonic()
    image = ensure_component_image()
    image_seconds = time.monotonic() - begin
    with control_plane(image, KUBERNETES) as (endpoint, timings):
        kubeconfig = write_kubeconfig(
            tmp_path_factory.mktemp("kube-apiserver") / "kubeconfig",
            endpoint.url,
            endpoint.token,
            endpoint.ca_pem,
        )
        yield ApiServer(
            endpoint.url,
            endpoint.token,
            endpoint.ca_pem,
            kubeconfig,
            {"image": image_seconds, **timings},
        )


@pytest.fixture
def apiserver_k8s(kube_apiserver: ApiServer) -> K8sClients:
    return kube_apiserver.clients()


@pytest.fixture
def api_namespace(apiserver_k8s: K8sClients, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of this test's own; deleted afterwards (the namespace controller finishes
    that in the background)."""
    name = unique_name(f"t-{request.node.name}")
    apiserver_k8s.core.create_namespace({"metadata": {"name": name}})
    yield name
    try:
        apiserver_k8s.core.delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture
def cluster_scoped(kube_apiserver: ApiServer) -> Iterator[ClusterScoped]:
    tracker = ClusterScoped(kube_apiserver.api_client())
    yield tracker
    failures = tracker.delete_all()
    assert not failures, f"could not delete cluster-scoped test objects: {failures}"
