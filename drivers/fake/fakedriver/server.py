"""A gRPC server on a unix socket that cleans up its socket file."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from concurrent import futures
from pathlib import Path

import grpc

log = logging.getLogger(__name__)

Registrar = Callable[[grpc.Server], None]


class UnixSocketServer:
    def __init__(
        self,
        name: str,
        socket_path: str | Path,
        registrars: Sequence[Registrar],
        max_workers: int = 16,
    ) -> None:
        self.name = name
        self.socket_path = Path(socket_path)
        # Each health stream holds a worker thread for its lifetime, so the
        # pool must be larger than the expected number of concurrent streams.
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=name)
        )
        for register in registrars:
            register(self._server)

    def start(self) -> None:
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        # A stale socket of a previous instance would make bind fail.
        self.socket_path.unlink(missing_ok=True)
        if not self._server.add_insecure_port(f"unix://{self.socket_path}"):
            raise RuntimeError(f"{self.name}: cannot listen on {self.socket_path}")
        self._server.start()
        os.chmod(self.socket_path, 0o600)
        log.info("%s server listening on %s", self.name, self.socket_path)

    def stop(self, grace: float = 2.0) -> None:
        self._server.stop(grace).wait(grace + 1.0)
        self.socket_path.unlink(missing_ok=True)
        log.info("%s server stopped, removed %s", self.name, self.socket_path)
