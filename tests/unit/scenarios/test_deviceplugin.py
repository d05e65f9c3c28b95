"""deviceplugin_checks against a stand-in kubelet over real unix sockets."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from deviceplugin_checks import (
    API_VERSION,
    KUBELET_SOCKET,
    MESSAGES,
    DevicePlugin,
    env_name,
)

RESOURCE = "example.com/gpu"


class StandInKubelet:
    """The kubelet's Registration service: records what plugins register."""

    def __init__(self, directory: Path) -> None:
        self.registered: list[Any] = []
        self.event = threading.Event()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        handler = grpc.method_handlers_generic_handler(
            f"{API_VERSION}.Registration",
            {
                "Register": grpc.unary_unary_rpc_method_handler(
                    self._register,
                    request_deserializer=MESSAGES["RegisterRequest"].FromString,
                    response_serializer=MESSAGES["Empty"].SerializeToString,
                )
            },
        )
        self.server.add_generic_rpc_handlers((handler,))
        self.server.add_insecure_port(f"unix://{directory / KUBELET_SOCKET}")
        self.server.start()

    def _register(self, request: Any, context: Any) -> Any:
        self.registered.append(request)
        self.event.set()
        return MESSAGES["Empty"]()


@pytest.fixture
def plugin_dir() -> Iterator[Path]:
    # Short: unix socket paths are limited to 108 bytes.
    with tempfile.TemporaryDirectory(prefix="dp-", dir="/tmp") as d:
        yield Path(d)


def test_registers_lists_and_allocates(plugin_dir: Path) -> None:
    kubelet = StandInKubelet(plugin_dir)
    plugin = DevicePlugin(RESOURCE, ["dev-0", "dev-1"], plugin_dir)
    try:
        plugin.start(timeout=60)  # registers: `with plugin` would allow only 10 s for it
        try:
            assert kubelet.event.wait(60)
            (request,) = kubelet.registered
            assert (request.version, request.endpoint, request.resource_name) == (
                API_VERSION,
                plugin.endpoint,
                RESOURCE,
            )
            assert plugin.socket_path.exists()
            with grpc.insecure_channel(f"unix://{plugin.socket_path}") as channel:
                watch = channel.unary_stream(
                    f"/{API_VERSION}.DevicePlugin/ListAndWatch",
                    request_serializer=MESSAGES["Empty"].SerializeToString,
                    response_deserializer=MESSAGES["ListAndWatchResponse"].FromString,
                )
                stream = watch(MESSAGES["Empty"]())
                first = next(stream)
                assert [(d.ID, d.health) for d in first.devices] == [
                    ("dev-0", "Healthy"),
                    ("dev-1", "Healthy"),
                ]
                stream.cancel()
                allocate = channel.unary_unary(
                    f"/{API_VERSION}.DevicePlugin/Allocate",
                    request_serializer=MESSAGES["AllocateRequest"].SerializeToString,
                    response_deserializer=MESSAGES["AllocateResponse"].FromString,
                )
                response = allocate(
                    MESSAGES["AllocateRequest"](
                        container_requests=[
                            MESSAGES["ContainerAllocateRequest"](devices_ids=["dev-1"])
                        ]
                    )
                )
                assert [dict(c.envs) for c in response.container_responses] == [
                    {"DEVICE_PLUGIN_EXAMPLE_COM_GPU": "dev-1"}
                ]
                assert plugin.allocations == [("dev-1",)]
                plugin.refuse_allocations = True
                with pytest.raises(grpc.RpcError) as refused:
                    allocate(MESSAGES["AllocateRequest"]())
                assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        finally:
            plugin.stop()
        assert not plugin.socket_path.exists()
    finally:
        kubelet.server.stop(0)


def test_env_name() -> None:
    assert env_name("fake.dra-conformance.io/accelerator") == (
        "DEVICE_PLUGIN_FAKE_DRA_CONFORMANCE_IO_ACCELERATOR"
    )


def test_registration_failure_removes_the_socket(plugin_dir: Path) -> None:
    plugin = DevicePlugin(RESOURCE, ["dev-0"], plugin_dir)
    with pytest.raises(grpc.RpcError):
        plugin.start(timeout=1.0)  # no kubelet listening
    assert not plugin.socket_path.exists()
