"""A minimal kubelet device plugin (deviceplugin/v1beta1), served from the harness process.

DRA-EXT-006 needs a node where a device plugin advertises the same extended resource a DRA
DeviceClass maps. The plugin runs here, not in a pod: the harness then needs no image with
gRPC in the cluster. Its socket is created in the node's device-plugin directory (for kind,
the node container's filesystem seen through /proc/<pid>/root), so the kubelet dials it like
any plugin's.

The wire messages are built from a descriptor written here (field numbers as in
k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto of v1.37.2) in a private descriptor
pool, so no generated code and no protoc are needed.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Iterator, Sequence
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

API_VERSION = "v1beta1"
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
KUBELET_SOCKET = "kubelet.sock"
HEALTHY = "Healthy"

_F = descriptor_pb2.FieldDescriptorProto
# message -> [(field, number, type, label, type_name)]
_MESSAGES: dict[str, list[tuple[str, int, int, int, str]]] = {
    "Empty": [],
    "DevicePluginOptions": [
        ("pre_start_required", 1, _F.TYPE_BOOL, _F.LABEL_OPTIONAL, ""),
        ("get_preferred_allocation_available", 2, _F.TYPE_BOOL, _F.LABEL_OPTIONAL, ""),
    ],
    "RegisterRequest": [
        ("version", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
        ("endpoint", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
        ("resource_name", 3, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
        ("options", 4, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, ".v1beta1.DevicePluginOptions"),
    ],
    "Device": [
        ("ID", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
        ("health", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
    ],
    "ListAndWatchResponse": [
        ("devices", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".v1beta1.Device"),
    ],
    "ContainerAllocateRequest": [
        ("devices_ids", 1, _F.TYPE_STRING, _F.LABEL_REPEATED, ""),
    ],
    "AllocateRequest": [
        (
            "container_requests",
            1,
            _F.TYPE_MESSAGE,
            _F.LABEL_REPEATED,
            ".v1beta1.ContainerAllocateRequest",
        ),
    ],
    "ContainerAllocateResponse": [
        (
            "envs",
            1,
            _F.TYPE_MESSAGE,
            _F.LABEL_REPEATED,
            ".v1beta1.ContainerAllocateResponse.EnvsEntry",
        ),
    ],
    "AllocateResponse": [
        (
            "container_responses",
            1,
            _F.TYPE_MESSAGE,
            _F.LABEL_REPEATED,
            ".v1beta1.ContainerAllocateResponse",
        ),
    ],
    "PreStartContainerRequest": [("devices_ids", 1, _F.TYPE_STRING, _F.LABEL_REPEATED, "")],
    "PreStartContainerResponse": [],
    "PreferredAllocationRequest": [],
    "PreferredAllocationResponse": [],
}


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(
        name="dra_conformance/deviceplugin_v1beta1.proto", package=API_VERSION, syntax="proto3"
    )
    for name, fields in _MESSAGES.items():
        message = fdp.message_type.add(name=name)
        for field, number, ftype, label, type_name in fields:
            added = message.field.add(name=field, number=number, type=ftype, label=label)
            if type_name:  # only message fields name a type (an empty name is still "set")
                added.type_name = type_name
        if name == "ContainerAllocateResponse":
            entry = message.nested_type.add(name="EnvsEntry")
            entry.options.map_entry = True
            for field, number in (("key", 1), ("value", 2)):
                entry.field.add(
                    name=field, number=number, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL
                )
    return fdp


def _message_classes() -> dict[str, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file_descriptor())
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{API_VERSION}.{name}"))
        for name in _MESSAGES
    }


MESSAGES = _message_classes()


def env_name(resource_name: str) -> str:
    """The variable the plugin's Allocate sets: DEVICE_PLUGIN_<resource, upper-cased>."""
    return "DEVICE_PLUGIN_" + re.sub(r"[^A-Z0-9]+", "_", resource_name.upper()).strip("_")


class DevicePlugin:
    """Serve `device_ids` of `resource_name` to the kubelet whose device-plugin directory is
    `plugin_dir` (as this process sees it). Use as a context manager: start() registers, stop()
    closes the ListAndWatch streams and removes the socket, which the kubelet takes as the
    plugin going away (its devices become unhealthy, allocatable drops to 0)."""

    def __init__(self, resource_name: str, device_ids: Sequence[str], plugin_dir: Path) -> None:
        self.resource_name = resource_name
        self.device_ids = tuple(device_ids)
        self.plugin_dir = Path(plugin_dir)
        self.endpoint = f"dra-conformance-{secrets.token_hex(4)}.sock"
        self.allocations: list[tuple[str, ...]] = []  # device ids per Allocate container request
        self.refuse_allocations = False  # answer Allocate with an error (see the EXT-006 fixture)
        self._stop = threading.Event()
        self._server: grpc.Server | None = None

    # -- DevicePlugin service ------------------------------------------------------------

    def _options(self, request: Any, context: Any) -> Any:
        return MESSAGES["DevicePluginOptions"]()

    def _list_and_watch(self, request: Any, context: Any) -> Iterator[Any]:
        devices = [MESSAGES["Device"](ID=d, health=HEALTHY) for d in self.device_ids]
        yield MESSAGES["ListAndWatchResponse"](devices=devices)
        while not self._stop.wait(1.0) and context.is_active():
            pass

    def _allocate(self, request: Any, context: Any) -> Any:
        if self.refuse_allocations:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "allocations are refused")
        responses = []
        for container in request.container_requests:
            ids = tuple(container.devices_ids)
            self.allocations.append(ids)
            responses.append(
                MESSAGES["ContainerAllocateResponse"](
                    envs={env_name(self.resource_name): ",".join(ids)}
                )
            )
        return MESSAGES["AllocateResponse"](container_responses=responses)

    def _empty(self, response: str) -> Any:
        return lambda request, context: MESSAGES[response]()

    def _handler(self) -> grpc.GenericRpcHandler:
        def unary(fn: Any, req: str, resp: str) -> grpc.RpcMethodHandler:
            return grpc.unary_unary_rpc_method_handler(
                fn,
                request_deserializer=MESSAGES[req].FromString,
                response_serializer=MESSAGES[resp].SerializeToString,
            )

        return grpc.method_handlers_generic_handler(
            f"{API_VERSION}.DevicePlugin",
            {
                "GetDevicePluginOptions": unary(self._options, "Empty", "DevicePluginOptions"),
                "ListAndWatch": grpc.unary_stream_rpc_method_handler(
                    self._list_and_watch,
                    request_deserializer=MESSAGES["Empty"].FromString,
                    response_serializer=MESSAGES["ListAndWatchResponse"].SerializeToString,
                ),
                "GetPreferredAllocation": unary(
                    self._empty("PreferredAllocationResponse"),
                    "PreferredAllocationRequest",
                    "PreferredAllocationResponse",
                ),
                "Allocate": unary(self._allocate, "AllocateRequest", "AllocateResponse"),
                "PreStartContainer": unary(
                    self._empty("PreStartContainerResponse"),
                    "PreStartContainerRequest",
                    "PreStartContainerResponse",
                ),
            },
        )

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def socket_path(self) -> Path:
        return self.plugin_dir / self.endpoint

    def start(self, timeout: float = 10.0) -> None:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        server.add_generic_rpc_handlers((self._handler(),))
        server.add_insecure_port(f"unix://{self.socket_path}")
        server.start()
        self._server = server
        try:
            self._register(timeout)
        except BaseException:
            self.stop()
            raise

    def _register(self, timeout: float) -> None:
        kubelet = self.plugin_dir / KUBELET_SOCKET
        with grpc.insecure_channel(f"unix://{kubelet}") as channel:
            register = channel.unary_unary(
                f"/{API_VERSION}.Registration/Register",
                request_serializer=MESSAGES["RegisterRequest"].SerializeToString,
                response_deserializer=MESSAGES["Empty"].FromString,
            )
            register(
                MESSAGES["RegisterRequest"](
                    version=API_VERSION,
                    endpoint=self.endpoint,
                    resource_name=self.resource_name,
                    options=MESSAGES["DevicePluginOptions"](),
                ),
                timeout=timeout,
            )

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.stop(grace=1.0).wait()
            self._server = None
        self.socket_path.unlink(missing_ok=True)

    def __enter__(self) -> DevicePlugin:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
