"""Watch the control ConfigMap (list + watch, reconnecting) and hand its data on.

Only the one ConfigMap is listed and watched (``metadata.name`` field
selector), which is what lets RBAC restrict the driver to that name.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from fakedriver.kubeapi import ApiError, KubeRest

log = logging.getLogger(__name__)

OnChange = Callable[[Mapping[str, str], str], None]


class ControlWatcher:
    def __init__(
        self,
        rest: KubeRest,
        namespace: str,
        name: str,
        on_change: OnChange,
        stopping: threading.Event,
        watch_timeout: int = 240,
    ) -> None:
        self._rest = rest
        self._path = f"/api/v1/namespaces/{namespace}/configmaps"
        self._selector = f"metadata.name={name}"
        self._name = name
        self._on_change = on_change
        self._stopping = stopping
        self._watch_timeout = watch_timeout
        self._thread: threading.Thread | None = None

    def initial_sync(self) -> str:
        """List once synchronously (so faults are known before serving); returns the list RV."""
        listing = self._rest.get(self._path, {"fieldSelector": self._selector})
        items = listing.get("items") or []
        self._deliver(
            items[0] if items else None, listing.get("metadata", {}).get("resourceVersion", "")
        )
        return str(listing.get("metadata", {}).get("resourceVersion", ""))

    def start(self, resource_version: str = "") -> None:
        self._thread = threading.Thread(
            target=self._run, args=(resource_version,), name="control-watch", daemon=True
        )
        self._thread.start()

    def _deliver(self, obj: Mapping[str, Any] | None, list_rv: str) -> None:
        if obj is None:
            self._on_change({}, list_rv)
        else:
            self._on_change(obj.get("data") or {}, str(obj["metadata"].get("resourceVersion", "")))

    def _run(self, resource_version: str) -> None:
        backoff = 1.0
        while not self._stopping.is_set():
            try:
                if not resource_version:
                    resource_version = self.initial_sync()
                resource_version = self._watch(resource_version)
                backoff = 1.0
            except ApiError as exc:
                if exc.status == 410:  # too old: relist
                    resource_version = ""
                    continue
                log.warning("control watch failed: %s; retrying in %.0fs", exc, backoff)
                resource_version = ""
            except Exception as exc:  # network errors: reconnect with backoff
                log.warning("control watch interrupted: %s; retrying in %.0fs", exc, backoff)
                resource_version = ""
            self._stopping.wait(backoff)
            backoff = min(backoff * 2, 30.0)

    def _watch(self, resource_version: str) -> str:
        query = {
            "watch": True,
            "fieldSelector": self._selector,
            "resourceVersion": resource_version,
            "allowWatchBookmarks": True,
            "timeoutSeconds": self._watch_timeout,
        }
        for event in self._rest.stream(self._path, query):
            if self._stopping.is_set():
                break
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                raise ApiError(int(obj.get("code", 0)), str(obj.get("message", "")))
            rv = str((obj.get("metadata") or {}).get("resourceVersion", resource_version))
            if kind in ("ADDED", "MODIFIED"):
                self._deliver(obj, rv)
            elif kind == "DELETED":
                self._on_change({}, rv)
            resource_version = rv
        return resource_version
