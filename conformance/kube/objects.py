"""Create and delete the builders' dicts by kind (the dynamic client finds the API that serves
each kind), and track what a test created.

Cluster-scoped objects (DeviceClass, DeviceTaintRule, PriorityClass) outlive the test
namespace, and a leftover NoExecute DeviceTaintRule would evict the next test's pods, so
tests create them through `ClusterObjects`, which deletes them at teardown; the end-of-run
sweep (cleanup.py) catches whatever a killed worker left.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from conformance.kube.apply import dynamic_client
from conformance.kube.client import K8sClients
from conformance.kube.field_manager import FIELD_MANAGER

# The API version a kind means when the caller names none (the builders always set one).
DEFAULT_API_VERSIONS = {
    "Namespace": "v1",
    "Pod": "v1",
    "ResourceClaim": "resource.k8s.io/v1",
    "ResourceClaimTemplate": "resource.k8s.io/v1",
    "DeviceClass": "resource.k8s.io/v1",
    "DeviceTaintRule": "resource.k8s.io/v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "Deployment": "apps/v1",
    "PodDisruptionBudget": "policy/v1",
}


@dataclass(frozen=True)
class KindOps:
    """A kind's create/delete/list, the namespace first where the kind is namespaced (the
    shape of the typed APIs' create_namespaced_x(namespace, body))."""

    namespaced: bool
    create: Callable[..., Any]
    delete: Callable[..., Any]
    list: Callable[..., Any]


def ops_for(k8s: K8sClients, kind: str, api_version: str = "") -> KindOps:
    """The create/delete/list calls for a kind the cluster serves, found by discovery (the
    dynamic client). A kind or version the cluster does not serve is the 404 the API server
    would give for it."""
    version = api_version or DEFAULT_API_VERSIONS.get(kind)
    if not version:
        raise ValueError(f"no apiVersion given for kind {kind!r}")
    try:
        resource = dynamic_client(k8s.api_client).resources.get(api_version=version, kind=kind)
    except ResourceNotFoundError:
        raise ApiException(
            status=404, reason=f"the cluster serves no {kind} in {version}"
        ) from None
    if resource.namespaced:
        return KindOps(
            True,
            lambda namespace, body, **kw: resource.create(body=body, namespace=namespace, **kw),
            lambda name, namespace, **kw: resource.delete(name=name, namespace=namespace, **kw),
            lambda namespace, **kw: resource.get(namespace=namespace, **kw),
        )
    return KindOps(
        False,
        lambda body, **kw: resource.create(body=body, **kw),
        lambda name, **kw: resource.delete(name=name, **kw),
        lambda **kw: resource.get(**kw),
    )


def create(k8s: K8sClients, body: Mapping[str, Any]) -> dict[str, Any]:
    ops = ops_for(k8s, body["kind"], body.get("apiVersion", ""))
    if ops.namespaced:
        namespace = body["metadata"]["namespace"]
        return ops.create(namespace, dict(body), field_manager=FIELD_MANAGER).to_dict()
    return ops.create(dict(body), field_manager=FIELD_MANAGER).to_dict()


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
