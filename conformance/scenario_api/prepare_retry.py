"""Have the kubelet retry a failed prepare now, not at its next resync (pure, no cluster).

When a prepare fails (the plugin not registered yet after a node or kubelet restart, a driver
being replaced, an injected failure), the v1.37.2 kubelet records a
FailedPrepareDynamicResources event and kuberuntime's SyncPod returns without an error
(kuberuntime_manager.go), so the pod worker does not retry after its 10 s error back-off: it
requeues the pod at its next resync, the 1-minute syncFrequency jittered by 0.5, 60-90 s later
(pod_workers.go completeWork). A change of the pod's annotations is an update that the kubelet
syncs at once (config.go podsDifferSemantically).

So a wait that expects a passing prepare failure touches an annotation of its pod, at most
every RETRY_INTERVAL seconds once such an event is there, as an error back-off would retry. It
changes when the kubelet retries, never what a retry does: a driver that cannot prepare fails
every retry, and the wait still ends on its timeout or abort with that failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

RETRY_ANNOTATION = "dra-conformance.io/prepare-retry"
RETRY_INTERVAL = (
    10.0  # seconds: the kubelet's back-off after a sync error (kubelet.go backOffPeriod)
)


@dataclass
class PrepareRetry:
    """Decides when to touch the pod; `touch(n)` writes the n-th touch."""

    touch: Callable[[int], None]
    interval: float = RETRY_INTERVAL
    clock: Callable[[], float] = time.monotonic
    touches: int = 0
    _last: float | None = None

    def observe(self, failures: Sequence[Any]) -> bool:
        """One read of a pod that is on a node and not ready, with `failures` its
        FailedPrepareDynamicResources events: touches the pod when due; True if it did."""
        if not failures:
            return False
        now = self.clock()
        if self._last is not None and now - self._last < self.interval:
            return False
        self.touches += 1
        self.touch(self.touches)
        self._last = now
        return True
