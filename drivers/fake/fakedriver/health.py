"""Device health as the driver reports it on the DRAResourceHealth stream.

Every report lists every device of the node (the kubelet treats a device
missing from reports as Unknown once its timeout expires). Reports are sent at
stream start, on every fault change and every ``interval`` seconds, well
inside the kubelet's 30 s default timeout. A withdrawn device is reported
Unhealthy, because pods that still hold it have lost it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from fakedriver.catalog import NodeInventory
from fakedriver.controls import FaultState
from fakedriver.misbehave import health as hooks


@dataclass(frozen=True)
class DeviceHealthInfo:
    pool: str
    device: str
    health: str  # Healthy | Unhealthy | Unknown
    message: str
    last_updated: int
    timeout_seconds: int


class HealthMonitor:
    def __init__(
        self,
        pool: str,
        inventory: Callable[[], NodeInventory],
        faults: FaultState,
        interval: float = 10.0,
        timeout_seconds: int = 30,
    ) -> None:
        self._pool = pool
        self._inventory = inventory
        self._faults = faults
        self.interval = interval
        self._timeout_seconds = timeout_seconds
        self._changed = threading.Condition()
        self._version = 0
        self.reports_sent = 0
        # Open health streams per API version ("v1", "v1alpha1"): which one the kubelet chose
        # shows in the driver's status (a 1.37 kubelet calls only a service it was advertised).
        self._streams: Counter[str] = Counter()
        self._streams_lock = threading.Lock()
        self.on_streams_changed: Callable[[], None] = lambda: None

    @contextmanager
    def stream(self, api_version: str) -> Iterator[None]:
        """Count one open stream of `api_version` while the caller serves it."""
        with self._streams_lock:
            self._streams[api_version] += 1
        self.on_streams_changed()
        try:
            yield
        finally:
            with self._streams_lock:
                self._streams[api_version] -= 1
            self.on_streams_changed()

    def open_streams(self) -> dict[str, int]:
        with self._streams_lock:
            return {version: n for version, n in sorted(self._streams.items()) if n}

    def notify(self) -> None:
        with self._changed:
            self._version += 1
            self._changed.notify_all()

    def snapshot(self) -> list[DeviceHealthInfo]:
        now = int(time.time())
        controls = self._faults.published
        out = []
        for device in self._inventory().devices:
            fault = controls.device(device.name)
            health, message = "Healthy", ""
            if fault.withdrawn:
                health, message = "Unhealthy", "withdrawn from the ResourceSlice"
            if fault.health:
                health, message = fault.health, fault.health_message or message
            out.append(
                DeviceHealthInfo(
                    pool=self._pool,
                    device=device.name,
                    health=health,
                    message=message,
                    last_updated=now,
                    timeout_seconds=self._timeout_seconds,
                )
            )
        return out

    def reports(self, active: Callable[[], bool]) -> Iterator[list[DeviceHealthInfo]]:
        """Reports for one stream while ``active()``."""
        seen: int | None = None
        last_sent = 0.0
        while active():
            with self._changed:
                version = self._version
                if version == seen:
                    remaining = self.interval - (time.monotonic() - last_sent)
                    if remaining > 0:
                        # At most a second, to notice a closed stream promptly.
                        self._changed.wait(timeout=min(remaining, 1.0))
                        version = self._version
            if not active():
                return
            if version == seen and time.monotonic() - last_sent < self.interval:
                continue
            seen, last_sent = version, time.monotonic()
            if hooks.silent(self._faults):
                continue
            self.reports_sent += 1
            yield self.snapshot()
