"""Server-side apply and ordered deletion (conformance.kube.apply) against the real test API
server: what is applied, by which field manager, a CRD's kind in the same batch, errors that
name the object and carry the API server's message, and deletion in reverse order."""

from __future__ import annotations

from typing import Any

import pytest
from kube_apiserver.server import ApiServer, ClusterScoped, unique_name
from kubernetes.client.exceptions import ApiException

from conformance.kube import apply
from conformance.kube.client import K8sClients

GROUP = "tests.dra-conformance.io"


def _crd(plural: str) -> dict[str, Any]:
    kind = plural.replace("-", "").capitalize()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural, "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def _config_map(namespace: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def test_order_puts_dependencies_first_and_keeps_the_rest() -> None:
    docs = [
        {"kind": "DaemonSet", "metadata": {"name": "a"}},
        {"kind": "ConfigMap", "metadata": {"name": "b"}},
        {"kind": "DeviceClass", "metadata": {"name": "c"}},
        {"kind": "Namespace", "metadata": {"name": "d"}},
    ]
    assert [d["metadata"]["name"] for d in apply.install_order(docs)] == ["d", "b", "a", "c"]


def test_describe_and_api_message() -> None:
    assert apply.describe({"kind": "Pod", "metadata": {"name": "p", "namespace": "n"}}) == (
        "Pod/n/p"
    )
    assert apply.describe({"kind": "Namespace", "metadata": {"name": "n"}}) == "Namespace/n"
    exc = ApiException(status=422, reason="Unprocessable Entity")
    exc.body = '{"kind": "Status", "message": "ConfigMap \\"x\\" is invalid"}'
    assert apply.api_message(exc) == 'ConfigMap "x" is invalid'
    assert apply.api_message(ApiException(status=500, reason="Boom")) == "500 Boom"


def test_apply_is_idempotent_and_owned_by_our_field_manager(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    docs = [_config_map(api_namespace, "cm", {"a": "1"})]
    assert apply.apply_all(apiserver_k8s.api_client, docs) == [f"ConfigMap/{api_namespace}/cm"]
    first = apiserver_k8s.core.read_namespaced_config_map("cm", api_namespace)
    managers = {f.manager for f in first.metadata.managed_fields}
    assert apply.FIELD_MANAGER in managers
    apply.apply_all(apiserver_k8s.api_client, docs)
    again = apiserver_k8s.core.read_namespaced_config_map("cm", api_namespace)
    assert again.metadata.resource_version == first.metadata.resource_version
    apply.apply_all(apiserver_k8s.api_client, [_config_map(api_namespace, "cm", {"a": "2"})])
    assert apiserver_k8s.core.read_namespaced_config_map("cm", api_namespace).data == {"a": "2"}


def test_a_kind_from_a_crd_in_the_same_batch_is_applied(
    kube_apiserver: ApiServer, cluster_scoped: ClusterScoped, api_namespace: str
) -> None:
    plural = unique_name("widgets").replace("-", "")
    crd = _crd(plural)
    cluster_scoped.track("apiextensions.k8s.io/v1", "CustomResourceDefinition", f"{plural}.{GROUP}")
    widget = {
        "apiVersion": f"{GROUP}/v1",
        "kind": crd["spec"]["names"]["kind"],
        "metadata": {"name": "w", "namespace": api_namespace},
        "spec": {"size": 3},
    }
    # The CR comes first in the input: the order puts the CRD before it.
    api_client = kube_apiserver.api_client()
    applied = apply.apply_all(api_client, [widget, crd])
    assert applied[0] == f"CustomResourceDefinition/{plural}.{GROUP}"
    stored = apply.dynamic_client(api_client).resources.get(
        api_version=f"{GROUP}/v1", kind=widget["kind"]
    )
    assert stored.get(name="w", namespace=api_namespace).to_dict()["spec"] == {"size": 3}


def test_an_invalid_object_is_named_with_the_api_servers_message(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    with pytest.raises(apply.ApplyError) as info:
        apply.apply_all(apiserver_k8s.api_client, [_config_map(api_namespace, "Bad_Name", {})])
    message = str(info.value)
    assert message.startswith(f"applying ConfigMap/{api_namespace}/Bad_Name failed: ")
    assert "a lowercase RFC 1123 subdomain" in message


def test_an_unserved_kind_is_named(apiserver_k8s: K8sClients) -> None:
    doc = {"apiVersion": "nothing.example.com/v1", "kind": "Nope", "metadata": {"name": "n"}}
    with pytest.raises(apply.ApplyError, match="Nope/n: the cluster serves no kind Nope"):
        apply.apply_all(apiserver_k8s.api_client, [doc])


def test_delete_runs_in_reverse_order_and_waits_until_gone(apiserver_k8s: K8sClients) -> None:
    namespace = unique_name("apply-delete")
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        _config_map(namespace, "cm", {"a": "1"}),
    ]
    apply.apply_all(apiserver_k8s.api_client, docs)
    deleted = apply.delete_all(apiserver_k8s.api_client, docs, timeout=180)
    assert deleted == [f"ConfigMap/{namespace}/cm", f"Namespace/{namespace}"]
    with pytest.raises(ApiException) as info:
        apiserver_k8s.core.read_namespace(namespace)
    assert info.value.status == 404
    assert apply.delete_all(apiserver_k8s.api_client, docs, timeout=10) == []
