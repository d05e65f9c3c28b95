"""Every state of a node's ResourceSlices of one driver while something happens to it.

A poll sees the states that last long enough; a driver that publishes a lower generation and
fixes it a moment later would slip through. So this follows a watch (the conformance waits
poll: they want the state at a deadline, this wants the path there). The watch runs in a
thread from `start()` to `stop()`, resumes from the last resourceVersion when the server ends
it, and lists again when that version has expired (410 Gone): a list is a state seen too.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from conformance.kube.client import K8sClients
from conformance.model.pool_history import PoolHistory

# The server ends each watch after this long; the thread then checks whether to stop.
WATCH_SECONDS = 2
TIMELINE_LIMIT = 200


class SliceWatch:
    def __init__(self, k8s: K8sClients, driver: str, node: str) -> None:
        self.k8s, self.driver, self.node = k8s, driver, node
        self.selector = f"spec.driver={driver},spec.nodeName={node}"
        self.history = PoolHistory()
        self.timeline: list[str] = []  # one line per change, for the failure text
        self.error: str | None = None
        self._slices: dict[str, dict[str, Any]] = {}  # uid -> slice
        self._version = ""
        self._started = 0.0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> SliceWatch:
        self._started = time.monotonic()
        self._relist("before the restarts")
        self._thread = threading.Thread(target=self._run, name="slice-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=WATCH_SECONDS * 3)

    def slices(self) -> list[dict[str, Any]]:
        """The state the watch shows now."""
        with self._lock:
            return list(self._slices.values())

    def _relist(self, why: str) -> None:
        listing = self.k8s.resource.list_resource_slice(field_selector=self.selector)
        items = [self.k8s.to_dict(s) for s in listing.items]
        with self._lock:
            self._slices = {s["metadata"]["uid"]: s for s in items}
            self._version = listing.metadata.resource_version
            self._record(f"listed {len(items)} slice(s) ({why})")

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                try:
                    self._follow()
                except ApiException as exc:
                    if exc.status != 410:
                        raise
                    self._relist("the watch's resourceVersion expired")
        except Exception as exc:  # noqa: BLE001 - reported by the test, not lost in a thread
            self.error = f"watching ResourceSlices ({self.selector}) failed: {exc}"

    def _follow(self) -> None:
        stream = watch.Watch().stream(
            self.k8s.resource.list_resource_slice,
            field_selector=self.selector,
            resource_version=self._version,
            timeout_seconds=WATCH_SECONDS,
            allow_watch_bookmarks=True,
        )
        for event in stream:
            kind, obj = event["type"], event["raw_object"]  # an ERROR event raises
            with self._lock:
                self._version = obj["metadata"]["resourceVersion"]
                if kind == "BOOKMARK":
                    continue
                if kind == "DELETED":
                    self._slices.pop(obj["metadata"]["uid"], None)
                else:
                    self._slices[obj["metadata"]["uid"]] = obj
                pool = obj["spec"]["pool"]
                self._record(
                    f"{kind} {obj['metadata']['name']} (pool {pool['name']} generation "
                    f"{pool.get('generation', 0)}, resourceSliceCount "
                    f"{pool.get('resourceSliceCount')}, "
                    f"{len(obj['spec'].get('devices') or ())} device(s))"
                )

    def _record(self, what: str) -> None:
        """Under the lock: the state now goes to the history."""
        line = f"+{time.monotonic() - self._started:.1f}s {what}"
        if len(self.timeline) < TIMELINE_LIMIT:
            self.timeline.append(line)
        self.history.observe(list(self._slices.values()), line)
