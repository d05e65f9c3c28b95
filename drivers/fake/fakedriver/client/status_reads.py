"""What the fake driver reports it applied (ConfigMap ``fake-dra-status-<node>``), read from
outside the driver: the status reads of `fakedriver.client.channel.FakeDriverControl`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException

from fakedriver.status import STATUS_KEY


def _resource_version_reached(observed: str, wanted: str) -> bool:
    if observed == wanted:
        return True
    if observed.isdigit() and wanted.isdigit():
        return int(observed) >= int(wanted)
    return False


class DriverStatusReads:
    """Mixin: needs ``core``, ``namespace``, ``status_prefix`` and ``last_resource_version``."""

    core: Any
    namespace: str
    status_prefix: str
    last_resource_version: str | None

    def applied(self, node: str) -> dict[str, Any] | None:
        """The driver's status document for the node, or None before its first write."""
        try:
            cm = self.core.read_namespaced_config_map(f"{self.status_prefix}{node}", self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        raw = (cm.data or {}).get(STATUS_KEY)
        return json.loads(raw) if raw else None

    def wait_applied(
        self,
        node: str,
        timeout: float = 60.0,
        predicate: Callable[[dict[str, Any]], bool] | None = None,
        resource_version: str | None = None,
        interval: float = 0.5,
    ) -> dict[str, Any]:
        """Wait until the node's driver applied our last write (and ``predicate`` holds)."""
        wanted = resource_version or self.last_resource_version
        deadline = time.monotonic() + timeout
        status: dict[str, Any] | None = None
        while True:
            status = self.applied(node)
            if status is not None:
                observed = str(status.get("observedControlResourceVersion") or "")
                if (wanted is None or _resource_version_reached(observed, wanted)) and (
                    predicate is None or predicate(status)
                ):
                    return status
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"fake driver on {node} did not apply control resourceVersion {wanted} "
                    f"within {timeout:.0f}s; last status: {json.dumps(status)[:2000]}"
                )
            time.sleep(interval)
