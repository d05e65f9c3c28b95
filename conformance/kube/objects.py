"""Create and delete the builders' dicts by kind, and track what a test created.

Cluster-scoped objects (DeviceClass, DeviceTaintRule, PriorityClass) outlive the test
namespace, and a leftover NoExecute DeviceTaintRule would evict the next test's pods, so
tests create them through `ClusterObjects`, which deletes them at teardown; the end-of-run
sweep (cleanup.py) catches whatever a killed worker left.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from conformance.kube.client import K8sClients


@dataclass(frozen=True)
class KindOps:
    namespaced: bool
    create: Callable[..., Any]
    delete: Callable[..., Any]
    list: Callable[..., Any]


def _taint_rule_api(k8s: K8sClients, api_version: str) -> Any:
    version = api_version.split("/", 1)[1]
    if version == "v1":
        return k8s.resource
    api = {"v1beta2": k8s_client.ResourceV1beta2Api, "v1alpha3": k8s_client.ResourceV1alpha3Api}
    if version not in api:
        raise ValueError(f"no DeviceTaintRule client for {api_version}")
    return api[version](k8s.api_client)


def ops_for(k8s: K8sClients, kind: str, api_version: str = "") -> KindOps:
    """The create/delete/list calls for a kind (DeviceTaintRule per API version)."""
    r, c = k8s.resource, k8s.core
    table: dict[str, KindOps] = {
        "Namespace": KindOps(False, c.create_namespace, c.delete_namespace, c.list_namespace),
        "Pod": KindOps(
            True, c.create_namespaced_pod, c.delete_namespaced_pod, c.list_namespaced_pod
        ),
        "ResourceClaim": KindOps(
            True,
            r.create_namespaced_resource_claim,
            r.delete_namespaced_resource_claim,
            r.list_namespaced_resource_claim,
        ),
        "ResourceClaimTemplate": KindOps(
            True,
            r.create_namespaced_resource_claim_template,
            r.delete_namespaced_resource_claim_template,
            r.list_namespaced_resource_claim_template,
        ),
        "DeviceClass": KindOps(
            False, r.create_device_class, r.delete_device_class, r.list_device_class
        ),
        "PriorityClass": KindOps(
            False,
            k8s.scheduling.create_priority_class,
            k8s.scheduling.delete_priority_class,
            k8s.scheduling.list_priority_class,
        ),
        "Deployment": KindOps(
            True,
            k8s.apps.create_namespaced_deployment,
            k8s.apps.delete_namespaced_deployment,
            k8s.apps.list_namespaced_deployment,
        ),
        "PodDisruptionBudget": KindOps(
            True,
            k8s.policy.create_namespaced_pod_disruption_budget,
            k8s.policy.delete_namespaced_pod_disruption_budget,
            k8s.policy.list_namespaced_pod_disruption_budget,
        ),
    }
    if kind == "DeviceTaintRule":
        api = _taint_rule_api(k8s, api_version or "resource.k8s.io/v1")
        return KindOps(
            False,
            api.create_device_taint_rule,
            api.delete_device_taint_rule,
            api.list_device_taint_rule,
        )
    if kind not in table:
        raise ValueError(f"no create/delete mapping for kind {kind!r}")
    return table[kind]


def create(k8s: K8sClients, body: Mapping[str, Any]) -> dict[str, Any]:
    ops = ops_for(k8s, body["kind"], body.get("apiVersion", ""))
    if ops.namespaced:
        return k8s.to_dict(ops.create(body["metadata"]["namespace"], dict(body)))
    return k8s.to_dict(ops.create(dict(body)))


def delete(
    k8s: K8sClients,
    kind: str,
    name: str,
    namespace: str | None = None,
    api_version: str = "",
    *,
    grace_period_seconds: int | None = None,
) -> bool:
    """Delete; False if it was already gone."""
    ops = ops_for(k8s, kind, api_version)
    kwargs: dict[str, Any] = {"propagation_policy": "Background"}
    if grace_period_seconds is not None:
        kwargs["grace_period_seconds"] = grace_period_seconds
    try:
        if ops.namespaced:
            ops.delete(name, namespace, **kwargs)
        else:
            ops.delete(name, **kwargs)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


class ClusterObjects:
    """Creates objects for one test and deletes the cluster-scoped ones at teardown."""

    def __init__(self, k8s: K8sClients) -> None:
        self.k8s = k8s
        self.created: list[tuple[str, str, str]] = []  # (kind, apiVersion, name)

    def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        created = create(self.k8s, body)
        if not ops_for(self.k8s, body["kind"], body.get("apiVersion", "")).namespaced:
            self.created.append(
                (body["kind"], body.get("apiVersion", ""), body["metadata"]["name"])
            )
        return created

    def delete_all(self) -> list[str]:
        """Delete in reverse order (taint rules before the classes they concern); returns
        the errors, so teardown can report them without hiding the test's own result."""
        errors = []
        for kind, api_version, name in reversed(self.created):
            try:
                delete(self.k8s, kind, name, api_version=api_version)
            except ApiException as exc:
                errors.append(f"{kind} {name}: {exc.status} {exc.reason}")
        self.created.clear()
        return errors
