"""The driver's API clients over real HTTP (the kubernetes client's ApiClient)
against an in-memory API server on 127.0.0.1."""

from __future__ import annotations

import threading

import pytest
from conftest import DRIVER, NODE, make_claim
from fakeapi import FakeApiServer
from fakedriver.claims import ApiClaimReader, ClaimError
from fakedriver.control import ControlWatcher
from fakedriver.controls import NodeControls
from fakedriver.kubeapi import ApiError, KubeRest
from fakedriver.publisher import ApiSliceClient, SlicePublisher
from fakedriver.slices import render_pool
from fakedriver.status import STATUS_KEY, ConfigMapStatusSink
from kubernetes import client

NS = "dra-fake-driver"


@pytest.fixture
def api():
    server = FakeApiServer().start()
    yield server
    server.stop()


@pytest.fixture
def rest(api):
    configuration = client.Configuration()
    configuration.host = api.url
    configuration.api_key = {"authorization": "Bearer test-token"}
    return KubeRest(client.ApiClient(configuration), timeout=5)


def test_claim_reader(api, rest):
    api.put("claim", make_claim("u1", [{"device": "fa80-0"}], name="c1", namespace="ns1"))
    claim = ApiClaimReader(rest).get_claim("ns1", "c1")
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "fa80-0"
    assert api.requests[-1]["authorization"] == "Bearer test-token"
    with pytest.raises(ClaimError, match="HTTP 404"):
        ApiClaimReader(rest).get_claim("ns1", "missing")


def test_slice_publishing_over_rest(api, rest, catalog):
    slices = ApiSliceClient(rest)
    publisher = SlicePublisher(slices, DRIVER, NODE)
    plan = render_pool(DRIVER, NODE, catalog.for_node(NODE), NodeControls())
    assert publisher.publish(plan).generation == 1
    listing = [
        r for r in api.requests if r["method"] == "GET" and r["path"].endswith("resourceslices")
    ]
    assert listing[0]["query"]["fieldSelector"] == f"spec.nodeName={NODE},spec.driver={DRIVER}"
    stored = api.items("slice")
    assert [s["spec"]["pool"]["generation"] for s in stored] == [1]
    slices.delete_slice("does-not-exist")  # 404 is fine
    with pytest.raises(ApiError) as info:
        slices.create_slice(stored[0])
    assert info.value.conflict


def test_status_sink_creates_then_patches(api, rest):
    sink = ConfigMapStatusSink(rest, NS, f"fake-dra-status-{NODE}", NODE)
    sink.write({"generation": 1})
    sink.write({"generation": 2})
    methods = [(r["method"], r["content_type"]) for r in api.requests]
    assert methods == [
        ("PATCH", "application/merge-patch+json"),
        ("POST", "application/json"),
        ("PATCH", "application/merge-patch+json"),
    ]
    stored = api.get("configmap", f"fake-dra-status-{NODE}", NS)
    assert stored["data"][STATUS_KEY].replace(" ", "").replace("\n", "") == '{"generation":2}'


def test_control_watcher_lists_then_watches(api, rest):
    api.put(
        "configmap",
        {"metadata": {"name": "fake-dra-control", "namespace": NS}, "data": {"_all": "{}"}},
    )
    api.put("configmap", {"metadata": {"name": "unrelated", "namespace": NS}, "data": {"x": "1"}})
    seen: list[tuple[dict, str]] = []
    changed = threading.Condition()

    def on_change(data, rv):
        with changed:
            seen.append((dict(data), rv))
            changed.notify_all()

    stopping = threading.Event()
    watcher = ControlWatcher(rest, NS, "fake-dra-control", on_change, stopping, watch_timeout=2)
    rv = watcher.initial_sync()
    assert seen == [({"_all": "{}"}, seen[0][1])] and rv
    watcher.start(rv)
    try:
        stored = api.put(
            "configmap",
            {"metadata": {"name": "fake-dra-control", "namespace": NS}, "data": {NODE: '{"a": 1}'}},
        )
        with changed:
            assert changed.wait_for(lambda: len(seen) >= 2, timeout=10)
        assert seen[1] == ({NODE: '{"a": 1}'}, stored["metadata"]["resourceVersion"])
        # The watch ends after timeoutSeconds and is resumed; later updates still arrive.
        api.wait_for(
            lambda: sum(r["query"].get("watch") == "true" for r in api.requests) >= 2, timeout=10
        )
        api.put(
            "configmap", {"metadata": {"name": "fake-dra-control", "namespace": NS}, "data": {}}
        )
        with changed:
            assert changed.wait_for(lambda: len(seen) >= 3, timeout=10)
        assert seen[2][0] == {}
        assert all(d != {"x": "1"} for d, _ in seen)  # only the selected ConfigMap
    finally:
        stopping.set()
