"""`--cluster in-cluster` against a real API server: the pod's service account (its token and CA
files, the API server from the pod's environment) becomes a kubeconfig every consumer reads;
outside a pod the provider says what to do. The shipped RBAC (deploy/rbac/) applies, and the
authorizer grants its account what the suites need and refuses what they do not."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from kube_apiserver.access import account_may
from kube_apiserver.server import ApiServer, ClusterScoped
from kubernetes.config import incluster_config

from conformance.cluster import provider
from conformance.errors import ClusterError
from conformance.kube.client import K8sClients, load_clients
from conformance.suite_root import SUITE_ROOT

RBAC = SUITE_ROOT / "deploy/rbac/dra-conformance.yaml"
ACCOUNT = "system:serviceaccount:dra-conformance:dra-conformance"


def _pod_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, server: ApiServer) -> None:
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text(server.token)
    ca.write_bytes(server.ca_pem)
    url = urlparse(server.url)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", url.hostname or "")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(url.port))
    monkeypatch.setenv("DRA_IN_CLUSTER_KUBECONFIG", str(tmp_path / "kubeconfig"))
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))


def test_the_pods_service_account_becomes_the_runs_kubeconfig(
    kube_apiserver: ApiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _pod_environment(monkeypatch, tmp_path, kube_apiserver)
    handle = provider.provision(kind="in-cluster")
    assert (handle.provider, handle.provisioned, handle.installs_driver) == (
        "in-cluster",
        False,
        False,
    )
    document = yaml.safe_load(Path(handle.kubeconfig).read_text())
    assert document["users"][0]["user"] == {"tokenFile": str(tmp_path / "token")}
    clients = load_clients(handle.kubeconfig, None)
    assert clients.core.read_namespace("default").metadata.name == "default"


def test_outside_a_pod_the_provider_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ClusterError) as caught:
        provider.provision(kind="in-cluster")
    assert "no service account" in caught.value.problem
    assert "--cluster existing" in caught.value.remedy


def _allowed(admin: K8sClients, verb: str, resource: str, group: str = "", sub: str = "") -> bool:
    return account_may(admin, ACCOUNT, verb, resource, group, sub)


def test_the_shipped_rbac_grants_the_suites_needs_and_no_more(
    apiserver_k8s: K8sClients, cluster_scoped: ClusterScoped
) -> None:
    documents = [d for d in yaml.safe_load_all(RBAC.read_text()) if d]
    assert [d["kind"] for d in documents] == [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
    ]
    for document in documents:
        if document["kind"] == "ServiceAccount":
            apiserver_k8s.core.create_namespaced_service_account("dra-conformance", document)
        else:
            cluster_scoped.create(document)
    for needed in (
        ("create", "namespaces"),
        ("create", "pods"),
        ("deletecollection", "pods"),
        ("deletecollection", "deployments", "apps"),
        ("get", "pods", "", "log"),
        ("create", "resourceclaims", "resource.k8s.io"),
        ("create", "devicetaintrules", "resource.k8s.io"),
        ("patch", "nodes"),
        ("get", "nodes", "", "proxy"),
        ("create", "pods", "", "eviction"),
        ("create", "subjectaccessreviews", "authorization.k8s.io"),
    ):
        assert _allowed(apiserver_k8s, *needed), needed
    for refused in (
        ("get", "secrets"),
        ("list", "secrets"),
        ("delete", "nodes"),
        ("create", "clusterrolebindings", "rbac.authorization.k8s.io"),
        ("create", "resourceslices", "resource.k8s.io"),
        ("impersonate", "serviceaccounts"),
    ):
        assert not _allowed(apiserver_k8s, *refused), refused
