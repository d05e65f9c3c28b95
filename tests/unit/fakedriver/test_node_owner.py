"""The plugin's start-up read of its Node over real HTTP: after a node restart the API
server's service address drops or refuses connections for a few seconds (kube-proxy has not
rewritten its rules yet); the plugin must try again soon rather than crash into a restart
back-off or wait out a long timeout."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import urllib3
from fakedriver.cli import _node_owner
from fakedriver.kubeapi import KubeRest
from kube_apiserver.server import ApiServer, unique_name
from kubernetes import client


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rest_to(port: int, **timeouts: float) -> KubeRest:
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    configuration.retries = 0
    return KubeRest(client.ApiClient(configuration), **timeouts)


def _unreachable_rest() -> KubeRest:
    return _rest_to(_closed_port(), timeout=2)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose connects hang: its accept queue is full, so the kernel drops new SYNs,
    as packets to a service address without its kube-proxy rules are dropped."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port), timeout=2)
    try:
        yield port
    finally:
        filler.close()
        server.close()


def test_a_connect_that_hangs_gives_up_after_the_connect_timeout(silent_port: int) -> None:
    # A connect held to the read timeout (120 s) would take 60 s or more: the upper bound
    # tells the two apart with room for a loaded machine, the lower bound is from before.
    rest = _rest_to(silent_port, timeout=120, connect_timeout=1)
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.HTTPError):
        rest.get("/api/v1/nodes/kind-worker")
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 60, f"a hanging connect took {elapsed:.1f} s (connect timeout 1 s)"


class _StopAfterRetries(logging.Handler):
    """Sets `stopping` once the plugin has logged `retries` retries: the test stops it by what
    it did, not by a clock a loaded machine can stretch."""

    def __init__(self, stopping: threading.Event, retries: int) -> None:
        super().__init__(logging.WARNING)
        self.stopping = stopping
        self.retries = retries
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "retrying" in record.getMessage():
            self.seen.append(record.getMessage())
            if len(self.seen) >= self.retries:
                self.stopping.set()


def test_unreachable_api_server_is_retried_until_stopped() -> None:
    stopping = threading.Event()
    handler = _StopAfterRetries(stopping, retries=2)
    logger = logging.getLogger("fakedriver")
    logger.addHandler(handler)
    # a plugin that never gives up nor gets stopped must still end the test
    backstop = threading.Timer(60, stopping.set)
    backstop.start()
    try:
        with pytest.raises(urllib3.exceptions.HTTPError):
            _node_owner(_unreachable_rest(), "kind-worker", None, stopping)
    finally:
        backstop.cancel()
        logger.removeHandler(handler)
    assert len(handler.seen) == 2, f"gave up after {len(handler.seen)} retries: {handler.seen}"
    assert "kind-worker" in handler.seen[0]


def test_owner_reference_names_the_node_read_from_the_api_server(
    kube_apiserver: ApiServer,
) -> None:
    name = unique_name("owner-node")
    core = client.CoreV1Api(kube_apiserver.api_client())
    node = core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name)))
    try:
        rest = KubeRest(kube_apiserver.api_client(), timeout=60)
        owner = _node_owner(rest, name, None, threading.Event())
        assert (owner["kind"], owner["name"], owner["uid"]) == ("Node", name, node.metadata.uid)
    finally:
        core.delete_node(name)
