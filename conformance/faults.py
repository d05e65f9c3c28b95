"""Fault injection for scenarios, behind one interface.

Two layers:

* ``FakeDriverControl`` speaks the bundled fake driver's control channel
  (ConfigMap ``fake-dra-control`` in ``dra-fake-driver``) and reads back what
  the driver applied (ConfigMap ``fake-dra-status-<node>``).
* ``FaultInjector`` is what scenarios use. ``FakeDriverInjector`` can do every
  fault kind through the control channel; ``DeviceTaintRuleInjector`` works
  with any driver but can only taint devices (resource.k8s.io DeviceTaintRule).
  Scenarios ask ``supports(kind)`` and skip when the answer is no. Both are
  context managers that undo what they did on exit.
"""

from __future__ import annotations

import enum
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kubernetes.client.exceptions import ApiException

FAKE_DRIVER_NAME = "fake.dra-conformance.io"
FAKE_DRIVER_NAMESPACE = "dra-fake-driver"
CONTROL_CONFIGMAP = "fake-dra-control"
STATUS_CONFIGMAP_PREFIX = "fake-dra-status-"
STATUS_KEY = "status.json"
ALL_NODES = "*"
# ConfigMap keys cannot contain "*"; the driver reads "_all" for every node.
ALL_NODES_KEY = "_all"
RUN_LABEL = "dra-conformance.io/run"
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")

MISBEHAVIOURS = frozenset(
    {
        "duplicate-device-names",
        "wrong-attribute",
        "missing-attribute",
        "unqualified-attribute",
        "inconsistent-pool",
        "keep-withdrawn-device",
        "cdi-wrong-device",
        "noop-unprepare",
        "fail-unprepare",
        "skip-claim-in-prepare",
        "lose-checkpoint-on-restart",
        "no-health-reports",
        "taint-prepared-devices",
        "missing-capacity",
        "phantom-device",
        "cdi-first-device-only",
        "unstable-cdi-spec",
        "unregistered",
        "prepare-held-devices",
        "slow-unprepare",
    }
)


class FaultKind(enum.Enum):
    TAINT = "taint"
    UNHEALTHY = "unhealthy"
    WITHDRAW = "withdraw"
    FAIL_PREPARE = "fail-prepare"
    DELAY_PREPARE = "delay-prepare"


class FaultNotSupported(Exception):
    """This injector cannot produce that fault; the scenario should skip."""


@dataclass(frozen=True)
class DeviceRef:
    """A device as published: driver, pool and device name (+ node if node-local)."""

    driver: str
    pool: str
    device: str
    node: str | None = None

    @property
    def node_name(self) -> str:
        # Node-local drivers (the fake one included) name the pool after the node.
        return self.node or self.pool

    @classmethod
    def of(cls, driver: str, device: Any) -> DeviceRef:
        """From a published device (conformance.devices.PublishedDevice)."""
        return cls(driver, device.pool, device.name, device.node)


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


# -- scenario-facing injectors --------------------------------------------------


@runtime_checkable
class FaultInjector(Protocol):
    """Device faults a scenario can request; undone by ``restore()`` / on exit."""

    def supports(self, kind: FaultKind) -> bool: ...
    def taint(
        self, device: DeviceRef, key: str, value: str = "", effect: str = "NoSchedule"
    ) -> None: ...
    def untaint(self, device: DeviceRef, key: str) -> None: ...
    def mark_unhealthy(self, device: DeviceRef, message: str = "") -> None: ...
    def withdraw(self, device: DeviceRef) -> None: ...
    def fail_prepare(
        self, node: str, device: DeviceRef | None = None, count: int | None = None
    ) -> None: ...
    def delay_prepare(self, node: str, seconds: float) -> None: ...
    def restore(self) -> None: ...
    def __enter__(self) -> FaultInjector: ...
    def __exit__(self, *exc_info: object) -> None: ...


class _InjectorBase:
    """Unsupported-by-default operations and the context manager protocol."""

    kinds: frozenset[FaultKind] = frozenset()
    # Text the driver's error carries for an injected prepare failure (None: unknown).
    prepare_failure_text: str | None = None

    def supports(self, kind: FaultKind) -> bool:
        return kind in self.kinds

    def _unsupported(self, kind: FaultKind) -> FaultNotSupported:
        return FaultNotSupported(f"{type(self).__name__} cannot inject {kind.value} faults")

    def taint(
        self, device: DeviceRef, key: str, value: str = "", effect: str = "NoSchedule"
    ) -> None:
        raise self._unsupported(FaultKind.TAINT)

    def untaint(self, device: DeviceRef, key: str) -> None:
        raise self._unsupported(FaultKind.TAINT)

    def mark_unhealthy(self, device: DeviceRef, message: str = "") -> None:
        raise self._unsupported(FaultKind.UNHEALTHY)

    def withdraw(self, device: DeviceRef) -> None:
        raise self._unsupported(FaultKind.WITHDRAW)

    def fail_prepare(
        self, node: str, device: DeviceRef | None = None, count: int | None = None
    ) -> None:
        raise self._unsupported(FaultKind.FAIL_PREPARE)

    def delay_prepare(self, node: str, seconds: float) -> None:
        raise self._unsupported(FaultKind.DELAY_PREPARE)

    def restore(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __enter__(self) -> FaultInjector:
        return self  # type: ignore[return-value]

    def __exit__(self, *exc_info: object) -> None:
        self.restore()


class FakeDriverInjector(_InjectorBase):
    """Every fault kind, through the fake driver's control channel."""

    kinds = frozenset(FaultKind)
    prepare_failure_text = "injected prepare failure"

    def __init__(
        self, control: FakeDriverControl, wait: bool = True, timeout: float = 60.0
    ) -> None:
        self.control = control
        self.wait = wait
        self.timeout = timeout
        self._undo: list[tuple[str, Callable[[], str]]] = []

    def _did(self, node: str, undo: Callable[[], str]) -> None:
        self._undo.append((node, undo))
        if self.wait:
            self.control.wait_applied(node, timeout=self.timeout)

    def _check(self, device: DeviceRef) -> None:
        if device.driver != FAKE_DRIVER_NAME:
            raise FaultNotSupported(f"{device.driver} is not the fake driver")

    def taint(
        self, device: DeviceRef, key: str, value: str = "", effect: str = "NoSchedule"
    ) -> None:
        self._check(device)
        node = device.node_name
        self.control.add_taint(node, device.device, key, value, effect)
        self._did(node, lambda: self.control.remove_taint(node, device.device, key, effect=effect))

    def untaint(self, device: DeviceRef, key: str) -> None:
        self._check(device)
        self.control.remove_taint(device.node_name, device.device, key)
        if self.wait:
            self.control.wait_applied(device.node_name, timeout=self.timeout)

    def mark_unhealthy(
        self, device: DeviceRef, message: str = "injected by dra-conformance"
    ) -> None:
        self._check(device)
        node = device.node_name
        self.control.set_unhealthy(node, device.device, message)
        self._did(node, lambda: self.control.set_healthy(node, device.device))

    def withdraw(self, device: DeviceRef) -> None:
        self._check(device)
        node = device.node_name
        self.control.withdraw(node, device.device)
        self._did(node, lambda: self.control.restore(node, device.device))

    def fail_prepare(
        self, node: str, device: DeviceRef | None = None, count: int | None = None
    ) -> None:
        name = None
        if device is not None:
            self._check(device)
            name = device.device
        self.control.fail_prepare(node, name, count)
        self._did(node, lambda: self.control.clear_fail_prepare(node, name))

    def delay_prepare(self, node: str, seconds: float) -> None:
        self.control.delay_prepare(node, seconds)
        self._did(node, lambda: self.control.delay_prepare(node, 0))

    def restore(self) -> None:
        nodes: list[str] = []
        while self._undo:
            node, undo = self._undo.pop()
            undo()
            nodes.append(node)
        if self.wait:
            for node in dict.fromkeys(nodes):
                if node != ALL_NODES:
                    self.control.wait_applied(node, timeout=self.timeout)


def _dns_part(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "x"


class DeviceTaintRuleInjector(_InjectorBase):
    """Driver-neutral device taints through resource.k8s.io DeviceTaintRules.

    Use ``api_version`` ``v1`` on 1.37, ``v1beta2`` on 1.36 (where the
    DRADeviceTaintRules gate is off by default) and ``v1alpha3`` on 1.35.
    """

    kinds = frozenset({FaultKind.TAINT})
    group = "resource.k8s.io"
    plural = "devicetaintrules"

    def __init__(
        self,
        custom_api: Any,
        run_id: str,
        api_version: str = "v1",
        name_prefix: str = "dra-conformance",
    ) -> None:
        self.custom = custom_api
        self.run_id = run_id
        self.version = api_version
        self.name_prefix = name_prefix
        self.created: dict[str, tuple[DeviceRef, str]] = {}

    def rule_body(
        self, name: str, device: DeviceRef, key: str, value: str, effect: str
    ) -> dict[str, Any]:
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        return {
            "apiVersion": f"{self.group}/{self.version}",
            "kind": "DeviceTaintRule",
            "metadata": {"name": name, "labels": {RUN_LABEL: self.run_id}},
            "spec": {
                "deviceSelector": {
                    "driver": device.driver,
                    "pool": device.pool,
                    "device": device.device,
                },
                "taint": taint,
            },
        }

    def taint(
        self, device: DeviceRef, key: str, value: str = "", effect: str = "NoSchedule"
    ) -> None:
        if effect not in TAINT_EFFECTS:
            raise ValueError(f"effect {effect!r} must be one of {TAINT_EFFECTS}")
        name = f"{self.name_prefix}-{_dns_part(self.run_id)}"[:200] + f"-{uuid.uuid4().hex[:10]}"
        self.custom.create_cluster_custom_object(
            self.group, self.version, self.plural, self.rule_body(name, device, key, value, effect)
        )
        self.created[name] = (device, key)

    def untaint(self, device: DeviceRef, key: str) -> None:
        for name in [n for n, (d, k) in self.created.items() if d == device and k == key]:
            self._delete(name)

    def _delete(self, name: str) -> None:
        try:
            self.custom.delete_cluster_custom_object(self.group, self.version, self.plural, name)
        except ApiException as exc:
            if exc.status != 404:
                raise
        self.created.pop(name, None)

    def rule_names(self) -> Iterator[str]:
        return iter(list(self.created))

    def restore(self) -> None:
        for name in list(self.created):
            self._delete(name)

    def delete_run_rules(self) -> int:
        """Delete every rule labelled with this run (e.g. left by a crashed worker)."""
        listing = self.custom.list_cluster_custom_object(
            self.group, self.version, self.plural, label_selector=f"{RUN_LABEL}={self.run_id}"
        )
        names = [item["metadata"]["name"] for item in listing.get("items", [])]
        for name in names:
            self._delete(name)
        return len(names)


def injector_for_method(
    method: str,
    *,
    core_api: Any,
    custom_api: Any,
    run_id: str,
    taint_rule_version: str | None,
    control_namespace: str | None = None,
    timeout: float = 60.0,
) -> FaultInjector:
    """The injector a profile's `faults.method` asks for. `taint_rule_version` is the
    resource.k8s.io version serving DeviceTaintRules (``v1`` on 1.37), None if none does."""
    if method == "fake-driver-control":
        control = FakeDriverControl(core_api, namespace=control_namespace or FAKE_DRIVER_NAMESPACE)
        return FakeDriverInjector(control, timeout=timeout)  # type: ignore[return-value]
    if method == "device-taint-rule":
        if taint_rule_version is None:
            raise FaultNotSupported("the cluster serves no DeviceTaintRule API")
        return DeviceTaintRuleInjector(  # type: ignore[return-value]
            custom_api, run_id, api_version=taint_rule_version
        )
    raise ValueError(f"unknown faults.method {method!r}")
