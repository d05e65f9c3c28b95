"""Server-side apply and deletion of plain manifests (dicts) through the dynamic client.

Objects others depend on go first, as helm orders an install; deletion runs in the reverse
order and waits for each object to be gone, so RBAC outlives the pods that use it on their
way out. A kind defined by a CRD of the same batch is found after the CRD is established
(discovery is refreshed then).
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.discovery import LazyDiscoverer
from kubernetes.dynamic.exceptions import ResourceNotFoundError
from kubernetes.dynamic.resource import Resource

from conformance.kube.field_manager import FIELD_MANAGER
from conformance.kube.waits import WaitTimeout, wait_until

# Objects others depend on go first (as helm orders an install); the rest keep their order.
KIND_ORDER = (
    "Namespace",
    "CustomResourceDefinition",
    "ServiceAccount",
    "ClusterRole",
    "Role",
    "ClusterRoleBinding",
    "RoleBinding",
    "ConfigMap",
    "Secret",
)
DEFAULT_NAMESPACE = "default"
# Deleted in the foreground: the object stays until its pods are gone, so a reinstall never
# runs beside a terminating kubelet plugin. Other kinds go at once (foreground would leave
# them waiting on the garbage collector for nothing).
FOREGROUND_KINDS = frozenset({"DaemonSet", "Deployment", "StatefulSet", "ReplicaSet", "Job"})
CRD_ESTABLISHED_TIMEOUT_S = 60.0


class ApplyError(Exception):
    """An object could not be applied or deleted: names it and carries the API's message."""


class _MemoryDiscoverer(LazyDiscoverer):
    """Discovery kept in memory: the library's file cache is keyed by host:port, which a kind
    cluster recreated on the same port would inherit, and parallel workers would write it."""

    def _write_cache(self) -> None:
        pass


# Never created (the discoverer above does not write): every client starts with fresh discovery.
_NO_CACHE_FILE = os.path.join(tempfile.gettempdir(), "dra-conformance-no-discovery-cache.json")


@functools.lru_cache(maxsize=16)
def dynamic_client(api_client: Any) -> DynamicClient:
    """The dynamic client over `api_client` (one per client: discovery is done once)."""
    return DynamicClient(api_client, cache_file=_NO_CACHE_FILE, discoverer=_MemoryDiscoverer)


def rank(document: Mapping[str, Any]) -> int:
    kind = document.get("kind")
    return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)


def install_order(documents: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Dependencies first; a stable sort, so the rest keep the order they were given in."""
    return sorted((dict(d) for d in documents), key=rank)


def describe(document: Mapping[str, Any]) -> str:
    """kind/namespace/name (kind/name for cluster-scoped or unnamespaced objects)."""
    meta = document.get("metadata") or {}
    parts = [str(document.get("kind") or "<no kind>")]
    if meta.get("namespace"):
        parts.append(str(meta["namespace"]))
    parts.append(str(meta.get("name") or "<no name>"))
    return "/".join(parts)


def api_message(exc: ApiException) -> str:
    """The API server's own message (the Status body), else status and reason."""
    try:
        message = json.loads(exc.body or "").get("message")
    except (ValueError, AttributeError):
        message = None
    return message or f"{exc.status} {exc.reason}".strip()


def _resource(dyn: DynamicClient, document: Mapping[str, Any]) -> Resource:
    try:
        return dyn.resources.get(api_version=document.get("apiVersion"), kind=document.get("kind"))
    except ResourceNotFoundError:
        raise ApplyError(
            f"{describe(document)}: the cluster serves no kind {document.get('kind')} in "
            f"{document.get('apiVersion')}"
        ) from None


def _namespace(resource: Resource, document: Mapping[str, Any]) -> str | None:
    if not resource.namespaced:
        return None
    return (document.get("metadata") or {}).get("namespace") or DEFAULT_NAMESPACE


def _crd_established(dyn: DynamicClient, name: str) -> bool:
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    status = crds.get(name=name).to_dict().get("status") or {}
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )


def _await_crds(dyn: DynamicClient, names: Sequence[str]) -> None:
    for name in names:
        try:
            wait_until(
                lambda n=name: _crd_established(dyn, n),
                bool,
                describe=f"CustomResourceDefinition {name} to be established",
                timeout=CRD_ESTABLISHED_TIMEOUT_S,
            )
        except WaitTimeout as exc:
            raise ApplyError(str(exc)) from None
    dyn.resources.invalidate_cache()  # the new kinds are served now


def apply_all(api_client: Any, documents: Iterable[Mapping[str, Any]]) -> list[str]:
    """Server-side apply every document, dependencies first; returns what was applied
    (kind/namespace/name). Conflicting field owners are overridden, as `kubectl apply
    --server-side --force-conflicts` does: the manifests are the truth."""
    dyn = dynamic_client(api_client)
    ordered = install_order(documents)
    applied: list[str] = []
    crds: list[str] = []
    for document in ordered:
        if crds and document.get("kind") != "CustomResourceDefinition":
            _await_crds(dyn, crds)
            crds = []
        resource = _resource(dyn, document)
        try:
            resource.server_side_apply(
                body=document,
                namespace=_namespace(resource, document),
                field_manager=FIELD_MANAGER,
                force_conflicts=True,
            )
        except ApiException as exc:
            raise ApplyError(f"applying {describe(document)} failed: {api_message(exc)}") from None
        applied.append(describe(document))
        if document.get("kind") == "CustomResourceDefinition":
            crds.append(document["metadata"]["name"])
    if crds:
        _await_crds(dyn, crds)
    return applied


def _gone(resource: Resource, name: str, namespace: str | None) -> bool:
    try:
        resource.get(name=name, namespace=namespace)
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


def delete_all(
    api_client: Any, documents: Iterable[Mapping[str, Any]], *, timeout: float
) -> list[str]:
    """Delete in the reverse of the install order, each object gone (a workload's pods too)
    before the next; missing objects and kinds are skipped. Returns what was deleted."""
    dyn = dynamic_client(api_client)
    deleted: list[str] = []
    for document in reversed(install_order(documents)):
        try:
            resource = _resource(dyn, document)
        except ApplyError:
            continue  # its CRD is gone already: so is the object
        name = document["metadata"]["name"]
        namespace = _namespace(resource, document)
        try:
            policy = "Foreground" if document.get("kind") in FOREGROUND_KINDS else "Background"
            resource.delete(name=name, namespace=namespace, propagation_policy=policy)
        except ApiException as exc:
            if exc.status == 404:
                continue
            raise ApplyError(f"deleting {describe(document)} failed: {api_message(exc)}") from None
        try:
            wait_until(
                lambda r=resource, n=name, ns=namespace: _gone(r, n, ns),
                bool,
                describe=f"{describe(document)} to be deleted",
                timeout=timeout,
            )
        except WaitTimeout as exc:
            raise ApplyError(str(exc)) from None
        deleted.append(describe(document))
    return deleted
