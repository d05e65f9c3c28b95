"""The `device-taint-rule` method: driver-neutral device taints through resource.k8s.io
DeviceTaintRules, which every driver supports (the API server and scheduler apply them)."""

from __future__ import annotations

import re
import uuid
from typing import Any

from kubernetes.client.exceptions import ApiException

from conformance.faults.interface import (
    DeviceRef,
    FaultContext,
    FaultKind,
    FaultNotSupported,
    InjectorBase,
)
from conformance.kube.builders import Builders
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.kube.waits import wait_until
from conformance.model.fault_config import TAINT_EFFECTS, FaultSpec

# The device-taint controller in kube-controller-manager writes this condition for every rule
# (reason OtherEffect for NoSchedule) once it has processed the rule's current generation:
# the control plane's informers have seen it, so the scheduler's allocation sees the taint.
OBSERVED_CONDITION = "EvictionInProgress"
ACKNOWLEDGE_TIMEOUT_S = 60.0


def acknowledged(rule: dict[str, Any]) -> bool:
    """Has the control plane processed this generation of the rule?"""
    generation = (rule.get("metadata") or {}).get("generation")
    return any(
        c.get("type") == OBSERVED_CONDITION and c.get("observedGeneration") == generation
        for c in ((rule.get("status") or {}).get("conditions") or [])
    )


def _dns_part(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "x"


class DeviceTaintRuleInjector(InjectorBase):
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
        acknowledge_timeout: float = ACKNOWLEDGE_TIMEOUT_S,
    ) -> None:
        self.custom = custom_api
        self.acknowledge_timeout = acknowledge_timeout
        self.run_id = run_id
        self.version = api_version
        self.name_prefix = name_prefix
        self.created: dict[str, tuple[DeviceRef, str]] = {}

    def rule_body(
        self, name: str, device: DeviceRef, key: str, value: str, effect: str
    ) -> dict[str, Any]:
        return Builders(self.run_id).device_taint_rule(
            name,
            driver=device.driver,
            pool=device.pool,
            device=device.device,
            key=key,
            value=value or None,
            effect=effect,
            api_version=f"{self.group}/{self.version}",
        )

    def taint(
        self, device: DeviceRef, key: str, value: str = "", effect: str = "NoSchedule"
    ) -> None:
        if effect not in TAINT_EFFECTS:
            raise ValueError(f"effect {effect!r} must be one of {TAINT_EFFECTS}")
        name = f"{self.name_prefix}-{_dns_part(self.run_id)}"[:200] + f"-{uuid.uuid4().hex[:10]}"
        self.custom.create_cluster_custom_object(
            self.group,
            self.version,
            self.plural,
            self.rule_body(name, device, key, value, effect),
            field_manager=FIELD_MANAGER,
        )
        self.created[name] = (device, key)
        self._await_acknowledged(name)

    def _await_acknowledged(self, name: str) -> None:
        """No fixed sleep for "the scheduler has seen the rule": wait for the controller's
        status condition on it, which it writes only after processing the rule."""
        wait_until(
            lambda: self.custom.get_cluster_custom_object(
                self.group, self.version, self.plural, name
            ),
            acknowledged,
            describe=f"DeviceTaintRule {name} to carry condition {OBSERVED_CONDITION} for its "
            "generation (kube-controller-manager's device-taint controller processed it)",
            timeout=self.acknowledge_timeout,
            interval=0.5,
            show=lambda rule: {
                "metadata.generation": rule.get("metadata", {}).get("generation"),
                "status": rule.get("status"),
            },
        )

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

    def restore(self) -> None:
        for name in list(self.created):
            self._delete(name)


def taint_rule_injector(spec: FaultSpec, context: FaultContext) -> DeviceTaintRuleInjector:
    if context.taint_rule_version is None:
        raise FaultNotSupported("the cluster serves no DeviceTaintRule API (resource.k8s.io)")
    from kubernetes import client as k8s_client

    return DeviceTaintRuleInjector(
        k8s_client.CustomObjectsApi(context.api_client),
        context.run_id,
        api_version=context.taint_rule_version,
    )
