"""Publish what the driver applied to ConfigMap ``fake-dra-status-<node>``.

The document (key ``status.json``) is rebuilt from live state on every flush.
Writes are merge patches, falling back to create on the first write: no get
is needed, which keeps the RBAC rule to create + patch.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from fakedriver.kubeapi import MERGE_PATCH, ApiError, KubeRest

log = logging.getLogger(__name__)

STATUS_KEY = "status.json"


class StatusSink:
    """Where status documents go; the API one, or a list in unit tests."""

    def write(self, document: dict[str, Any]) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class ConfigMapStatusSink(StatusSink):
    def __init__(self, rest: KubeRest, namespace: str, name: str, node_name: str) -> None:
        self._rest = rest
        self._namespace = namespace
        self._name = name
        self._node = node_name

    def write(self, document: dict[str, Any]) -> None:
        data = {STATUS_KEY: json.dumps(document, indent=1, sort_keys=True)}
        path = f"/api/v1/namespaces/{self._namespace}/configmaps"
        try:
            self._rest.request(
                "PATCH", f"{path}/{self._name}", body={"data": data}, content_type=MERGE_PATCH
            )
        except ApiError as exc:
            if not exc.not_found:
                raise
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": self._name,
                    "namespace": self._namespace,
                    "labels": {
                        "app.kubernetes.io/name": "fake-dra-kubelet-plugin",
                        "fake.dra-conformance.io/status-of": self._node,
                    },
                },
                "data": data,
            }
            self._rest.request("POST", path, body=body)


class StatusReporter:
    """Coalesces change notifications into at most one write per ``min_interval``."""

    def __init__(
        self,
        sink: StatusSink,
        build: Callable[[], dict[str, Any]],
        stopping: threading.Event,
        min_interval: float = 1.0,
    ) -> None:
        self._sink = sink
        self._build = build
        self._stopping = stopping
        self._min_interval = min_interval
        self._dirty = threading.Event()
        self._thread: threading.Thread | None = None
        self.last: dict[str, Any] | None = None

    def mark_dirty(self) -> None:
        self._dirty.set()

    def flush(self) -> None:
        self._dirty.clear()
        document = self._build()
        try:
            self._sink.write(document)
            self.last = document
        except Exception as exc:  # status is best effort; retry on the next change
            log.warning("status write failed: %s", exc)
            self._dirty.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="status", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            if self._dirty.wait(timeout=1.0) and not self._stopping.is_set():
                self.flush()
                self._stopping.wait(self._min_interval)
