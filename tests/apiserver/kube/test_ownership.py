"""Field ownership given back (conformance.kube.ownership, rollout.give_back_ownership): what
the driver-update patches took from a DaemonSet's owners goes back to them, so the vendor's
next server-side apply meets no conflict. What the API server records and refuses is checked
against the real test API server; the merge of managedFields entries is pure."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kube_apiserver.workloads import plugin_daemonset
from kubernetes.client.exceptions import ApiException

from conformance.kube import apply, ownership, rollout
from conformance.kube.client import K8sClients
from conformance.kube.field_manager import FIELD_MANAGER

VENDOR = "helm"  # the manager Helm 4's server-side apply writes as


def _vendor_apply(k8s: K8sClients, body: dict[str, Any], manager: str = VENDOR) -> None:
    """A server-side apply as the vendor's tooling does it: its own manager, no force."""
    resource = apply.dynamic_client(k8s.api_client).resources.get(
        api_version=body["apiVersion"], kind=body["kind"]
    )
    resource.server_side_apply(
        body=body,
        namespace=body["metadata"]["namespace"],
        field_manager=manager,
        force_conflicts=False,
    )


def _entries(k8s: K8sClients, namespace: str) -> list[dict[str, Any]]:
    return rollout.managed_fields(rollout.read_daemonset(k8s, namespace, "plugin"))


def _container_fields(entry: dict[str, Any]) -> dict[str, Any]:
    spec = (entry.get("fieldsV1") or {}).get("f:spec") or {}
    containers = ((spec.get("f:template") or {}).get("f:spec") or {}).get("f:containers") or {}
    return containers.get('k:{"name":"plugin"}') or {}


def _driver_update(k8s: K8sClients, namespace: str, image: str) -> list[dict[str, Any]]:
    """What the driver-update suite does to the DaemonSet: change the template (image and an
    annotation), put the original back; returns the managedFields from before."""
    daemonset = rollout.read_daemonset(k8s, namespace, "plugin")
    original = daemonset["spec"]["template"]
    changed = rollout.changed_template(original, annotations={"u": "1"}, image=image)
    rollout.set_template(k8s, namespace, "plugin", changed)
    rollout.set_template(k8s, namespace, "plugin", original)
    return rollout.managed_fields(daemonset)


def test_vendor_applies_a_new_image_after_a_driver_update(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    k8s = apiserver_k8s
    _vendor_apply(k8s, plugin_daemonset(api_namespace, "example.com/plugin:v1"))
    owners = _driver_update(k8s, api_namespace, "example.com/plugin:broken")
    # The restore put the image back but left it (and the pull policy) owned by the harness.
    taken = [e for e in _entries(k8s, api_namespace) if ownership.is_ours(e)]
    assert taken and "f:image" in _container_fields(taken[0])

    assert rollout.give_back_ownership(k8s, api_namespace, "plugin", owners)

    entries = _entries(k8s, api_namespace)
    assert not [e for e in entries if e["manager"] == FIELD_MANAGER], entries
    [vendor] = [e for e in entries if e["manager"] == VENDOR]
    assert {"f:image", "f:imagePullPolicy"} <= set(_container_fields(vendor))
    # The vendor's next release: a new image, applied without force, and no conflict.
    _vendor_apply(k8s, plugin_daemonset(api_namespace, "example.com/plugin:v2"))
    daemonset = rollout.read_daemonset(k8s, api_namespace, "plugin")
    assert daemonset["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "example.com/plugin:v2"
    )
    assert not rollout.give_back_ownership(k8s, api_namespace, "plugin", owners)  # nothing left


def test_a_driver_the_harness_installed_keeps_its_apply_owner(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    k8s = apiserver_k8s
    apply.apply_all(k8s.api_client, [plugin_daemonset(api_namespace, "example.com/plugin:v1")])
    owners = _driver_update(k8s, api_namespace, "example.com/plugin:broken")
    assert rollout.give_back_ownership(k8s, api_namespace, "plugin", owners)
    entries = _entries(k8s, api_namespace)
    assert [(e["manager"], e["operation"]) for e in entries] == [(FIELD_MANAGER, "Apply")]
    assert "f:image" in _container_fields(entries[0])
    # And a third party's apply of another image conflicts with the install, as before.
    with pytest.raises(ApiException) as info:
        _vendor_apply(k8s, plugin_daemonset(api_namespace, "example.com/plugin:v2"), "kubectl")
    assert info.value.status == 409 and FIELD_MANAGER in (info.value.body or "")


def test_union_fields_merges_nested_sets() -> None:
    a = {"f:spec": {"f:template": {"f:spec": {".": {}, "f:a": {}}}}, "f:metadata": {}}
    b = {"f:spec": {"f:template": {"f:spec": {"f:b": {}}}, "f:x": {}}}
    before = copy.deepcopy(a)
    assert ownership.union_fields(a, b) == {
        "f:spec": {"f:template": {"f:spec": {".": {}, "f:a": {}, "f:b": {}}}, "f:x": {}},
        "f:metadata": {},
    }
    assert a == before  # not changed in place


def _entry(manager: str, operation: str, fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": "apps/v1",
        "fieldsV1": fields,
        **extra,
    }


def test_given_back_drops_our_updates_and_restores_each_owner() -> None:
    image = {"f:image": {}}
    original = [
        _entry("helm", "Apply", {"f:a": {}, **image}),
        _entry("argocd", "Apply", image),  # lost every field to the harness
        _entry(FIELD_MANAGER, "Update", {"f:old": {}}),  # an earlier run's leftover: ours too
        _entry("kcm", "Update", {"f:status": {}}, subresource="status"),
    ]
    current = [
        _entry("helm", "Apply", {"f:a": {}, "f:new": {}}),
        _entry(FIELD_MANAGER, "Update", image),
        _entry("kcm", "Update", {"f:status": {"f:n": {}}}, subresource="status"),
    ]
    assert ownership.given_back(current, original) == [
        _entry("helm", "Apply", {"f:a": {}, "f:new": {}, **image}),
        _entry("kcm", "Update", {"f:status": {"f:n": {}}}, subresource="status"),
        _entry("argocd", "Apply", image),
    ]
    # The harness's own install (Apply) is an owner like the others.
    ours = [_entry(FIELD_MANAGER, "Apply", image)]
    assert ownership.given_back(ours + [_entry(FIELD_MANAGER, "Update", image)], ours) == ours
