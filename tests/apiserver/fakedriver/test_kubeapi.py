"""The driver's API clients over real HTTP (the kubernetes client's ApiClient) against the
real test API server: what it stores, rejects and streams decides these tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import tenacity
from fakedriver.catalog import Catalog
from fakedriver.claims import ApiClaimReader, ClaimError
from fakedriver.control_watch import ControlWatcher
from fakedriver.controls import NodeControls
from fakedriver.kubeapi import ApiError, KubeRest
from fakedriver.publisher import ApiSliceClient, SlicePublisher
from fakedriver.slices import render_pool
from fakedriver.status import STATUS_KEY, ConfigMapStatusSink
from kube_apiserver.server import ApiServer, unique_name
from kubernetes import client
from unit.fakedriver.conftest import DRIVER, make_claim

from conformance.kube.client import K8sClients

SLICES = "/apis/resource.k8s.io/v1/resourceslices"


class RecordingRest(KubeRest):
    """The real client, noting each call it makes (a spy: the server still answers)."""

    def __init__(self, api_client: Any) -> None:
        super().__init__(api_client, timeout=60)
        self.calls: list[tuple[str, str, Mapping[str, Any] | None, str]] = []

    def request(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        self.calls.append((method, path, query, content_type))
        return super().request(method, path, query, body, content_type)

    def stream(self, path: str, query: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        self.calls.append(("WATCH", path, query, ""))
        return super().stream(path, query)


@pytest.fixture
def rest(kube_apiserver: ApiServer) -> RecordingRest:
    return RecordingRest(kube_apiserver.api_client())


@pytest.fixture
def node() -> str:
    # "*-worker" in the catalog; unique so no other test's slices share its pool.
    return unique_name("fd") + "-worker"


def test_claim_reader(
    rest: RecordingRest,
    apiserver_k8s: K8sClients,
    api_namespace: str,
    kube_apiserver: ApiServer,
    tmp_path: Path,
) -> None:
    claim = make_claim("u1", [{"device": "fa80-0"}], name="c1", namespace=api_namespace)
    status = claim.pop("status")
    claim["metadata"].pop("uid")
    apiserver_k8s.resource.create_namespaced_resource_claim(api_namespace, claim)
    # The allocation is the scheduler's to write; none runs here, so the test writes it.
    apiserver_k8s.resource.patch_namespaced_resource_claim_status(
        "c1", api_namespace, {"status": status}
    )
    read = ApiClaimReader(rest).get_claim(api_namespace, "c1")
    assert read["status"]["allocation"]["devices"]["results"][0]["device"] == "fa80-0"
    with pytest.raises(ClaimError, match="HTTP 404"):
        ApiClaimReader(rest).get_claim(api_namespace, "missing")
    anonymous = client.Configuration()
    anonymous.host = kube_apiserver.url
    (tmp_path / "ca.pem").write_bytes(kube_apiserver.ca_pem)
    anonymous.ssl_ca_cert = str(tmp_path / "ca.pem")
    with pytest.raises(ClaimError, match="HTTP 403"):  # the token is what lets the reader in
        ApiClaimReader(KubeRest(client.ApiClient(anonymous))).get_claim(api_namespace, "c1")


def test_slice_publishing_over_rest(
    rest: RecordingRest, apiserver_k8s: K8sClients, catalog: Catalog, node: str
) -> None:
    foreign = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-other"},
        "spec": {
            "driver": "other.example.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "x"}],
        },
    }
    apiserver_k8s.resource.create_resource_slice(foreign)
    slices = ApiSliceClient(rest)
    publisher = SlicePublisher(slices, DRIVER, node)
    plan = render_pool(DRIVER, node, catalog.for_node(node), NodeControls())
    try:
        assert publisher.publish(plan).generation == 1
        listing = [q for m, p, q, _ in rest.calls if m == "GET" and p == SLICES]
        assert listing[0] == {"fieldSelector": f"spec.nodeName={node},spec.driver={DRIVER}"}
        stored = slices.list_slices(node, DRIVER)
        assert [s["spec"]["pool"]["generation"] for s in stored] == [1]
        assert {d["name"] for d in stored[0]["spec"]["devices"]} == {
            "fa80-0",
            "fa80-1",
            "ff16-0",
            "fs32-0",
            "fx-0",  # the fabric device, with binding conditions the API server kept
        }
        # The other driver's slice on the node is outside the field selector: untouched.
        assert apiserver_k8s.resource.read_resource_slice(f"{node}-other").spec.driver == (
            "other.example.com"
        )
        slices.delete_slice("does-not-exist")  # 404 is fine
        with pytest.raises(ApiError) as info:
            slices.create_slice({**stored[0], "metadata": {"name": stored[0]["metadata"]["name"]}})
        assert info.value.conflict
        stale = {**stored[0], "metadata": {**stored[0]["metadata"], "resourceVersion": "1"}}
        with pytest.raises(ApiError) as info:
            slices.update_slice(stale)
        assert info.value.conflict  # optimistic concurrency, decided by the server
    finally:
        apiserver_k8s.resource.delete_collection_resource_slice(
            field_selector=f"spec.nodeName={node}"
        )


def test_status_sink_creates_then_patches(
    rest: RecordingRest, apiserver_k8s: K8sClients, api_namespace: str, node: str
) -> None:
    name = f"fake-dra-status-{node}"
    sink = ConfigMapStatusSink(rest, api_namespace, name, node)
    sink.write({"generation": 1})
    sink.write({"generation": 2})
    methods = [(m, ctype) for m, _, _, ctype in rest.calls]
    assert methods == [
        ("PATCH", "application/merge-patch+json"),  # 404: not there yet
        ("POST", "application/json"),
        ("PATCH", "application/merge-patch+json"),
    ]
    stored = apiserver_k8s.core.read_namespaced_config_map(name, api_namespace)
    assert json.loads(stored.data[STATUS_KEY]) == {"generation": 2}


def _retry_until(predicate: Any, what: str) -> None:
    for attempt in tenacity.Retrying(
        stop=tenacity.stop_after_delay(60), wait=tenacity.wait_fixed(0.1), reraise=True
    ):
        with attempt:
            assert predicate(), what


def test_control_watcher_lists_then_watches(
    rest: RecordingRest, apiserver_k8s: K8sClients, api_namespace: str, node: str
) -> None:
    core = apiserver_k8s.core
    core.create_namespaced_config_map(
        api_namespace, {"metadata": {"name": "fake-dra-control"}, "data": {"_all": "{}"}}
    )
    core.create_namespaced_config_map(
        api_namespace, {"metadata": {"name": "unrelated"}, "data": {"x": "1"}}
    )
    seen: list[tuple[dict, str]] = []
    lock = threading.Lock()

    def on_change(data: Mapping[str, str], rv: str) -> None:
        with lock:
            seen.append((dict(data), rv))

    stopping = threading.Event()
    watcher = ControlWatcher(
        rest, api_namespace, "fake-dra-control", on_change, stopping, watch_timeout=1
    )
    rv = watcher.initial_sync()
    assert seen == [({"_all": "{}"}, seen[0][1])] and rv
    watcher.start(rv)
    try:
        stored = core.patch_namespaced_config_map(
            "fake-dra-control", api_namespace, {"data": {node: '{"a": 1}'}}
        )
        _retry_until(lambda: len(seen) >= 2, "the update was not delivered")
        assert seen[1] == ({"_all": "{}", node: '{"a": 1}'}, stored.metadata.resource_version)
        # The server ends the watch after timeoutSeconds; the watcher resumes it, and later
        # updates still arrive.
        _retry_until(lambda: sum(m == "WATCH" for m, _, _, _ in rest.calls) >= 2, "no second watch")
        core.replace_namespaced_config_map(
            "fake-dra-control", api_namespace, {"metadata": {"name": "fake-dra-control"}}
        )
        _retry_until(lambda: len(seen) >= 3, "the update after the resumed watch was lost")
        assert seen[2][0] == {}
        core.patch_namespaced_config_map("unrelated", api_namespace, {"data": {"x": "2"}})
        core.delete_namespaced_config_map("fake-dra-control", api_namespace)
        _retry_until(lambda: len(seen) >= 4, "the deletion was not delivered")
        assert seen[3][0] == {}
        assert all(d.get("x") is None for d, _ in seen)  # only the selected ConfigMap
    finally:
        stopping.set()
