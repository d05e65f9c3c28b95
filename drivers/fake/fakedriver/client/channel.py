"""Client of the fake driver's control channel, used from outside the driver (its fault
plug-in, its CLI, and the project's own tests): ConfigMap ``fake-dra-control`` in
``dra-fake-driver`` holds the faults (format: fakedriver.controls), and the driver reports
what it applied in ConfigMap ``fake-dra-status-<node>``.

A control made with a ``run_id`` records which run injected each fault, in the control
ConfigMap's annotation ``dra-conformance.io/fault-runs`` (fault key -> run id), written in the
same update as the fault itself: a run killed right after an injection still leaves a record,
and ``sweep(run_id)`` undoes exactly that run's faults.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException

from fakedriver.client.records import (
    FAULT_RUNS_ANNOTATION,
    Records,
    annotations_of,
    fault_key,
    forget,
    parse_fault_key,
    prune,
    records_of,
)
from fakedriver.client.status_reads import DriverStatusReads
from fakedriver.controls import ALL_NODES_KEY, MISBEHAVIOURS, TAINT_EFFECTS

FAKE_DRIVER_NAME = "fake.dra-conformance.io"
FAKE_DRIVER_NAMESPACE = "dra-fake-driver"
CONTROL_CONFIGMAP = "fake-dra-control"
STATUS_CONFIGMAP_PREFIX = "fake-dra-status-"
ALL_NODES = "*"  # every node; stored under ALL_NODES_KEY (ConfigMap keys cannot contain "*")
CONTROL_LABELS = {"app.kubernetes.io/name": "fake-dra-kubelet-plugin"}


class FakeDriverControl(DriverStatusReads):
    """Read-modify-write client of the fake driver's control ConfigMap."""

    def __init__(
        self,
        core_api: Any,
        namespace: str = FAKE_DRIVER_NAMESPACE,
        configmap: str = CONTROL_CONFIGMAP,
        status_prefix: str = STATUS_CONFIGMAP_PREFIX,
        run_id: str | None = None,
    ) -> None:
        self.core = core_api
        self.run_id = run_id  # recorded as the injector of every fault this control adds
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

    def read_records(self) -> Records:
        """Which run injected each recorded fault (fault key -> run id)."""
        try:
            cm = self.core.read_namespaced_config_map(self.configmap, self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return {}
            raise
        return records_of(cm)

    def _record(self, node: str, device: str | None, what: str) -> Callable[[Records], None]:
        """Record this control's run as the injector of the fault (nothing without a run)."""

        def change(records: Records) -> None:
            if self.run_id:
                records[fault_key(node, device, what)] = self.run_id

        return change

    def _mutate(
        self,
        node: str,
        change: Callable[[dict[str, Any]], None],
        records: Callable[[Records], None] | None = None,
    ) -> str:
        key = self._key(node)
        for _ in range(10):
            try:
                cm = self.core.read_namespaced_config_map(self.configmap, self.namespace)
                data = dict(cm.data or {})
                resource_version = cm.metadata.resource_version
            except ApiException as exc:
                if exc.status != 404:
                    raise
                cm, data, resource_version = None, {}, None
            document = json.loads(data.get(key) or "{}")
            change(document)
            prune(document)
            if document:
                data[key] = json.dumps(document, sort_keys=True)
            else:
                data.pop(key, None)
            annotations = annotations_of(cm)
            fault_runs = records_of(cm)
            if records is not None:
                records(fault_runs)
            if fault_runs:
                annotations[FAULT_RUNS_ANNOTATION] = json.dumps(fault_runs, sort_keys=True)
            else:
                annotations.pop(FAULT_RUNS_ANNOTATION, None)
            metadata: dict[str, Any] = {
                "name": self.configmap,
                "namespace": self.namespace,
                "labels": dict(CONTROL_LABELS),
                "annotations": annotations,
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

    def _device(
        self,
        node: str,
        device: str,
        change: Callable[[dict[str, Any]], None],
        records: Callable[[Records], None] | None = None,
    ) -> str:
        def apply(document: dict[str, Any]) -> None:
            change(document.setdefault("devices", {}).setdefault(device, {}))

        return self._mutate(node, apply, records)

    # -- device faults ----------------------------------------------------------

    def set_unhealthy(
        self, node: str, device: str, message: str = "injected by dra-conformance"
    ) -> str:
        return self._device(
            node,
            device,
            lambda d: d.update(health="Unhealthy", healthMessage=message),
            self._record(node, device, "health"),
        )

    def set_healthy(self, node: str, device: str) -> str:
        def change(d: dict[str, Any]) -> None:
            d.pop("health", None)
            d.pop("healthMessage", None)

        return self._device(node, device, change, forget(node, device, "health"))

    def set_health_unknown(self, node: str, device: str, message: str = "") -> str:
        return self._device(
            node,
            device,
            lambda d: d.update(health="Unknown", healthMessage=message),
            self._record(node, device, "health"),
        )

    def withdraw(self, node: str, device: str) -> str:
        return self._device(
            node,
            device,
            lambda d: d.update(withdrawn=True),
            self._record(node, device, "withdrawn"),
        )

    def restore(self, node: str, device: str) -> str:
        return self._device(
            node,
            device,
            lambda d: d.pop("withdrawn", None),
            forget(node, device, "withdrawn"),
        )

    def add_taint(
        self, node: str, device: str, key: str, value: str = "", effect: str = "NoSchedule"
    ) -> str:
        if effect not in TAINT_EFFECTS:
            raise ValueError(f"effect {effect!r} must be one of {TAINT_EFFECTS}")

        def change(d: dict[str, Any]) -> None:
            taints = [t for t in d.get("taints", []) if (t["key"], t["effect"]) != (key, effect)]
            d["taints"] = [*taints, {"key": key, "value": value, "effect": effect}]

        return self._device(
            node, device, change, self._record(node, device, f"taint:{key}:{effect}")
        )

    def remove_taint(
        self, node: str, device: str, key: str, value: str | None = None, effect: str | None = None
    ) -> str:
        def keep(t: dict[str, Any]) -> bool:
            return not (
                t["key"] == key
                and (value is None or t.get("value", "") == value)
                and (effect is None or t["effect"] == effect)
            )

        what = f"taint:{key}:{effect}" if effect is not None and value is None else f"taint:{key}:"
        records = forget(node, device, what) if value is None else None
        return self._device(
            node,
            device,
            lambda d: d.update(taints=[t for t in d.get("taints", []) if keep(t)]),
            records,
        )

    # -- prepare faults ---------------------------------------------------------

    def fail_prepare(self, node: str, device: str | None = None, count: int | None = None) -> str:
        """Fail the next ``count`` prepares (every prepare if None) on the node or for a device."""
        return self._counted(node, device, "failPrepare", count)

    def clear_fail_prepare(self, node: str, device: str | None = None) -> str:
        return self.fail_prepare(node, device, count=0)

    def fail_binding(self, node: str, device: str, count: int | None = 1) -> str:
        """The device's next ``count`` allocations (every one if None) get its binding failure
        condition True (controls ``failBinding``); 0 clears it."""
        return self._counted(node, device, "failBinding", count)

    def _counted(self, node: str, device: str | None, key: str, count: int | None) -> str:
        """Set control ``key`` to fire ``count`` times (always if None; 0 clears it), on the
        node or for a device."""
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
                d.pop(key, None)
            else:
                d[key] = spec

        records = forget(node, device, key) if spec is None else self._record(node, device, key)
        if device is None:
            return self._mutate(node, change, records)
        return self._device(node, device, change, records)

    def clear_fail_binding(self, node: str, device: str) -> str:
        return self.fail_binding(node, device, count=0)

    def delay_prepare(self, node: str, seconds: float) -> str:
        if seconds < 0:
            raise ValueError("seconds must be >= 0")

        def change(d: dict[str, Any]) -> None:
            if seconds:
                d["prepareDelaySeconds"] = float(seconds)
            else:
                d.pop("prepareDelaySeconds", None)

        records = (
            self._record(node, None, "prepareDelay")
            if seconds
            else forget(node, None, "prepareDelay")
        )
        return self._mutate(node, change, records)

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

            def forget_node(records: Records) -> None:
                for key in [k for k in records if parse_fault_key(k)[0] == node]:
                    del records[key]

            return self._mutate(node, lambda d: d.clear(), forget_node)
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
                    "labels": dict(CONTROL_LABELS),
                    # Every fault is gone, and so is every record of who injected one.
                    "annotations": {
                        k: v for k, v in annotations_of(cm).items() if k != FAULT_RUNS_ANNOTATION
                    },
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

    # -- faults of a run ------------------------------------------------------------

    def fault_runs(self) -> set[str]:
        """The runs that have recorded faults in effect."""
        return set(self.read_records().values())

    def sweep(self, run_id: str) -> list[str]:
        """Undo every fault recorded for `run_id` (e.g. of a killed run); what was undone."""
        undone = []
        for key, run in sorted(self.read_records().items()):
            if run != run_id:
                continue
            node, device, what = parse_fault_key(key)
            self._undo(node, device, what)
            undone.append(f"{what} on {node}" + (f"/{device}" if device else ""))
        return undone

    def _undo(self, node: str, device: str | None, what: str) -> None:
        if what == "failPrepare":
            self.clear_fail_prepare(node, device)
        elif what == "failBinding" and device is not None:
            self.clear_fail_binding(node, device)
        elif what == "prepareDelay":
            self.delay_prepare(node, 0)
        elif device is None:  # a device fault without a device: a malformed record
            self._mutate(node, lambda d: None, forget(node, device, what))
        elif what == "health":
            self.set_healthy(node, device)
        elif what == "withdrawn":
            self.restore(node, device)
        elif what.startswith("taint:"):
            _, key, effect = what.split(":", 2)
            self.remove_taint(node, device, key, effect=effect or None)
        else:
            self._mutate(node, lambda d: None, forget(node, device, what))
