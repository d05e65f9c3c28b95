"""Client of the fake driver's control channel, used from outside the driver (its fault
plug-in, its CLI, and the project's own tests): ConfigMap ``fake-dra-control`` in
``dra-fake-driver`` holds the faults (format: fakedriver.controls), and the driver reports
what it applied in ConfigMap ``fake-dra-status-<node>``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException

from fakedriver.controls import ALL_NODES_KEY, MISBEHAVIOURS, TAINT_EFFECTS
from fakedriver.status import STATUS_KEY

FAKE_DRIVER_NAME = "fake.dra-conformance.io"
FAKE_DRIVER_NAMESPACE = "dra-fake-driver"
CONTROL_CONFIGMAP = "fake-dra-control"
STATUS_CONFIGMAP_PREFIX = "fake-dra-status-"
ALL_NODES = "*"  # every node; stored under ALL_NODES_KEY (ConfigMap keys cannot contain "*")


def _resource_version_reached(observed: str, wanted: str) -> bool:
    if observed == wanted:
        return True
    if observed.isdigit() and wanted.isdigit():
        return int(observed) >= int(wanted)
    return False


class FakeDriverControl:
    """Read-modify-write client of the fake driver's control ConfigMap."""

    def __init__(
        self,
        core_api: Any,
        namespace: str = FAKE_DRIVER_NAMESPACE,
        configmap: str = CONTROL_CONFIGMAP,
        status_prefix: str = STATUS_CONFIGMAP_PREFIX,
    ) -> None:
        self.core = core_api
        self.namespace = namespace
        self.configmap = configmap
        self.status_prefix = status_prefix
        self.last_resource_version: str | None = None

    # -- low level ------------------------------------------------------------

    @staticmethod
    def _key(node: str) -> str:
        return ALL_NODES_KEY if node == ALL_NODES else node

    def read(self) -> dict[str, dict[str, Any]]:
        """The control documents by key (node name or ``_all``)."""
        try:
            cm = self.core.read_namespaced_config_map(self.configmap, self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return {}
            raise
        return {k: json.loads(v or "{}") for k, v in (cm.data or {}).items()}

    def _mutate(self, node: str, change: Callable[[dict[str, Any]], None]) -> str:
        key = self._key(node)
        for _ in range(10):
            try:
                cm = self.core.read_namespaced_config_map(self.configmap, self.namespace)
                data = dict(cm.data or {})
                resource_version = cm.metadata.resource_version
            except ApiException as exc:
                if exc.status != 404:
                    raise
                data, resource_version = {}, None
            document = json.loads(data.get(key) or "{}")
            change(document)
            _prune(document)
            if document:
                data[key] = json.dumps(document, sort_keys=True)
            else:
                data.pop(key, None)
            metadata: dict[str, Any] = {
                "name": self.configmap,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/name": "fake-dra-kubelet-plugin"},
            }
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}
            try:
                if resource_version is None:
                    result = self.core.create_namespaced_config_map(self.namespace, body)
                else:
                    metadata["resourceVersion"] = resource_version
                    result = self.core.replace_namespaced_config_map(
                        self.configmap, self.namespace, body
                    )
            except ApiException as exc:
                if exc.status == 409:  # lost a race with another writer: redo
                    continue
                raise
            self.last_resource_version = str(result.metadata.resource_version)
            return self.last_resource_version
        raise RuntimeError(f"could not update ConfigMap {self.namespace}/{self.configmap}")

    def _device(self, node: str, device: str, change: Callable[[dict[str, Any]], None]) -> str:
        def apply(document: dict[str, Any]) -> None:
            change(document.setdefault("devices", {}).setdefault(device, {}))

        return self._mutate(node, apply)

    # -- device faults ----------------------------------------------------------

    def set_unhealthy(
        self, node: str, device: str, message: str = "injected by dra-conformance"
    ) -> str:
        return self._device(
            node, device, lambda d: d.update(health="Unhealthy", healthMessage=message)
        )

    def set_healthy(self, node: str, device: str) -> str:
        def change(d: dict[str, Any]) -> None:
            d.pop("health", None)
            d.pop("healthMessage", None)

        return self._device(node, device, change)

    def set_health_unknown(self, node: str, device: str, message: str = "") -> str:
        return self._device(
            node, device, lambda d: d.update(health="Unknown", healthMessage=message)
        )

    def withdraw(self, node: str, device: str) -> str:
        return self._device(node, device, lambda d: d.update(withdrawn=True))

    def restore(self, node: str, device: str) -> str:
        return self._device(node, device, lambda d: d.pop("withdrawn", None))

    def add_taint(
        self, node: str, device: str, key: str, value: str = "", effect: str = "NoSchedule"
    ) -> str:
        if effect not in TAINT_EFFECTS:
            raise ValueError(f"effect {effect!r} must be one of {TAINT_EFFECTS}")

        def change(d: dict[str, Any]) -> None:
            taints = [t for t in d.get("taints", []) if (t["key"], t["effect"]) != (key, effect)]
            d["taints"] = [*taints, {"key": key, "value": value, "effect": effect}]

        return self._device(node, device, change)

    def remove_taint(
        self, node: str, device: str, key: str, value: str | None = None, effect: str | None = None
    ) -> str:
        def keep(t: dict[str, Any]) -> bool:
            return not (
                t["key"] == key
                and (value is None or t.get("value", "") == value)
                and (effect is None or t["effect"] == effect)
            )

        return self._device(
            node, device, lambda d: d.update(taints=[t for t in d.get("taints", []) if keep(t)])
        )

    # -- prepare faults ---------------------------------------------------------

    def fail_prepare(self, node: str, device: str | None = None, count: int | None = None) -> str:
        """Fail the next ``count`` prepares (every prepare if None) on the node or for a device."""
        if count is not None and count < 0:
            raise ValueError("count must be >= 0")
        # A fresh id gives a fresh budget: the driver counts consumption per id.
        spec: dict[str, Any] | None = {"id": uuid.uuid4().hex[:12]}
        if count is None:
            spec["always"] = True
        elif count == 0:
            spec = None
        else:
            spec["count"] = count

        def change(d: dict[str, Any]) -> None:
            if spec is None:
                d.pop("failPrepare", None)
            else:
                d["failPrepare"] = spec

        if device is None:
            return self._mutate(node, change)
        return self._device(node, device, change)

    def clear_fail_prepare(self, node: str, device: str | None = None) -> str:
        return self.fail_prepare(node, device, count=0)

    def delay_prepare(self, node: str, seconds: float) -> str:
        if seconds < 0:
            raise ValueError("seconds must be >= 0")

        def change(d: dict[str, Any]) -> None:
            if seconds:
                d["prepareDelaySeconds"] = float(seconds)
            else:
                d.pop("prepareDelaySeconds", None)

        return self._mutate(node, change)

    # -- misbehaviours and reset -----------------------------------------------

    def set_misbehaviour(self, name: str, enabled: bool, node: str = ALL_NODES) -> str:
        if name not in MISBEHAVIOURS:
            raise ValueError(
                f"unknown misbehaviour {name!r}; known: {', '.join(sorted(MISBEHAVIOURS))}"
            )

        def change(d: dict[str, Any]) -> None:
            misbehaviours = d.setdefault("misbehaviours", {})
            if enabled or node != ALL_NODES:
                # An explicit false on a node overrides an "_all" true.
                misbehaviours[name] = bool(enabled)
            else:
                misbehaviours.pop(name, None)

        return self._mutate(node, change)

    def clear(self, node: str | None = None) -> str:
        """Remove every fault of one node (or of all nodes, including ``*``)."""
        if node is not None:
            return self._mutate(node, lambda d: d.clear())
        for _ in range(10):
            try:
                cm = self.core.read_namespaced_config_map(self.configmap, self.namespace)
            except ApiException as exc:
                if exc.status == 404:
                    return self._mutate(ALL_NODES, lambda d: d.clear())
                raise
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": self.configmap,
                    "namespace": self.namespace,
                    "resourceVersion": cm.metadata.resource_version,
                    "labels": {"app.kubernetes.io/name": "fake-dra-kubelet-plugin"},
                },
                "data": {},
            }
            try:
                result = self.core.replace_namespaced_config_map(
                    self.configmap, self.namespace, body
                )
            except ApiException as exc:
                if exc.status == 409:
                    continue
                raise
            self.last_resource_version = str(result.metadata.resource_version)
            return self.last_resource_version
        raise RuntimeError(f"could not clear ConfigMap {self.namespace}/{self.configmap}")

    # -- read back -------------------------------------------------------------

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


def _prune(document: dict[str, Any]) -> None:
    """Drop empty containers so a reverted fault leaves no trace."""
    devices = document.get("devices")
    if isinstance(devices, dict):
        for name in [n for n, d in devices.items() if not d or d == {"taints": []}]:
            del devices[name]
        for d in devices.values():
            if d.get("taints") == []:
                del d["taints"]
    for key in ("devices", "misbehaviours"):
        if key in document and not document[key]:
            del document[key]
