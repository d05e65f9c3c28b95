"""Liveness: the plugin dials its own two sockets as the kubelet does and asks each a cheap
question — GetInfo on the registration socket, a NodePrepareResources with no claims on the
DRA socket. Both answering within the deadline means the process is alive: its gRPC servers
accept connections and have a free worker. Served as GET /livez by fakedriver.ready.

Nothing here needs the API server, so a control plane that is down or being upgraded never
makes a healthy plugin look dead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc

from fakedriver.grpcapi import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)

# Both calls run at once, so a probe answers within this (plus the HTTP round trip): below the
# DaemonSet's timeoutSeconds of 5, yet seconds for a machine so loaded that a thread waits.
DEADLINE_SECONDS = 3.0

# The user agent the probe's calls carry, so the servicers can tell them from the kubelet's.
USER_AGENT = "fakedriver-liveness"

_DRA_STUBS: dict[str, tuple[ModuleType, ModuleType]] = {
    "v1": (dra_v1_pb2, dra_v1_pb2_grpc),
    "v1beta1": (dra_v1beta1_pb2, dra_v1beta1_pb2_grpc),
}


def from_probe(context: grpc.ServicerContext) -> bool:
    """Whether a call came from this probe (by its user agent)."""
    agent = dict(context.invocation_metadata()).get("user-agent", "")
    return str(agent).startswith(USER_AGENT)


@dataclass(frozen=True)
class _Call:
    socket: str  # "registration socket" or "DRA socket"
    path: Path
    method: str
    channel: grpc.Channel | None
    future: Any  # a grpc future, None when the socket file is missing


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class LivenessCheck:
    """`check()` -> (alive, one-line reason). `excused()` names why the registration socket
    may fail to answer on purpose ("" when it must answer): a plugin that withholds or refuses
    registration by design is alive, and restarting it would change what the kubelet sees."""

    def __init__(
        self,
        registration_socket: Path,
        dra_socket: Path,
        dra_version: str = "v1",
        excused: Callable[[], str] = lambda: "",
        deadline: float = DEADLINE_SECONDS,
    ) -> None:
        if dra_version not in _DRA_STUBS:
            raise ValueError(f"unknown DRA API version {dra_version!r}: use one of {_DRA_STUBS}")
        self._registration = Path(registration_socket)
        self._dra = Path(dra_socket)
        self._dra_version = dra_version
        self._excused = excused
        self._deadline = deadline

    def check(self) -> tuple[bool, str]:
        calls = [self._get_info(), self._prepare_nothing()]
        try:
            errors = {call.socket: self._error(call) for call in calls}
        finally:
            for call in calls:
                if call.channel is not None:
                    call.channel.close()
        excuse = self._excused()
        if errors["registration socket"] and excuse:
            errors["registration socket"] = ""
        failed = [f"{c.socket} {c.path}: {errors[c.socket]}" for c in calls if errors[c.socket]]
        if failed:
            return False, "not alive: " + "; ".join(failed)
        answered = "alive: the DRA socket answered NodePrepareResources"
        if excuse:
            return True, f"{answered}; registration socket not required ({_one_line(excuse)})"
        return True, f"{answered}, the registration socket GetInfo"

    def _channel(self, path: Path) -> grpc.Channel:
        return grpc.insecure_channel(
            f"unix://{path}", options=[("grpc.primary_user_agent", USER_AGENT)]
        )

    def _get_info(self) -> _Call:
        path = self._registration
        if not path.is_socket():
            return _Call("registration socket", path, "GetInfo", None, None)
        channel = self._channel(path)
        stub = pluginregistration_v1_pb2_grpc.RegistrationStub(channel)
        request = pluginregistration_v1_pb2.InfoRequest()
        future = stub.GetInfo.future(request, timeout=self._deadline)
        return _Call("registration socket", path, "GetInfo", channel, future)

    def _prepare_nothing(self) -> _Call:
        """An empty request: it prepares nothing, and the preparer answers it before any
        injected delay, statistic or status write (fakedriver.prepare), so a driver told to be
        slow still answers its probe and tests measure only the kubelet's calls."""
        path = self._dra
        if not path.is_socket():
            return _Call("DRA socket", path, "NodePrepareResources", None, None)
        pb2, pb2_grpc = _DRA_STUBS[self._dra_version]
        channel = self._channel(path)
        stub = pb2_grpc.DRAPluginStub(channel)
        future = stub.NodePrepareResources.future(
            pb2.NodePrepareResourcesRequest(), timeout=self._deadline
        )
        return _Call("DRA socket", path, "NodePrepareResources", channel, future)

    @staticmethod
    def _error(call: _Call) -> str:
        """ "" when the call answered, else what went wrong, on one line."""
        if call.future is None:
            return "missing (no socket file)"
        try:
            call.future.result()
        except grpc.RpcError as exc:
            code = exc.code()
            name = code.name if code is not None else "UNKNOWN"
            return f"{call.method} failed: {name}: {_one_line(exc.details() or '')}"
        return ""
