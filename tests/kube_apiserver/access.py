"""Clients with less than admin rights, for tests of how the harness meets a real 403: a
ServiceAccount bound to a ClusterRole of the test's choosing, and a token from the TokenRequest
API (the API server signs it; no controller is involved)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tenacity
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from conformance.kube.client import K8sClients, clients_for
from kube_apiserver.server import ApiServer, ClusterScoped, unique_name, write_kubeconfig


def _allowed(clients: K8sClients, rule: dict[str, Any]) -> bool:
    """The binding reached the authorizer's cache (a SelfSubjectAccessReview says so)."""
    if "nonResourceURLs" in rule:
        attributes = {"nonResourceAttributes": {"path": rule["nonResourceURLs"][0], "verb": "get"}}
    else:
        attributes = {
            "resourceAttributes": {
                "group": rule["apiGroups"][0],
                "resource": rule["resources"][0],
                "verb": rule["verbs"][0],
            }
        }
    review = k8s.AuthorizationV1Api(clients.api_client).create_self_subject_access_review(
        {"spec": attributes}
    )
    return bool(review.status.allowed)


def clients_with_rules(
    server: ApiServer,
    admin: K8sClients,
    cluster_scoped: ClusterScoped,
    namespace: str,
    rules: list[dict[str, Any]],
    directory: Path,
) -> K8sClients:
    """Clients authorized for `rules` (ClusterRole PolicyRules) and nothing else; their
    kubeconfig is written to `directory`."""
    name = unique_name("restricted")
    admin.core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    cluster_scoped.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        }
    )
    cluster_scoped.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        }
    )
    request = admin.core.create_namespaced_service_account_token(
        name, namespace, {"spec": {"expirationSeconds": 3600}}
    )
    kubeconfig = write_kubeconfig(
        directory / f"{name}.kubeconfig", server.url, request.status.token, server.ca_pem
    )
    clients = clients_for(k8s_config.new_client_from_config(config_file=str(kubeconfig)))
    # RBAC and the token authenticator read through informers: wait until both know.
    for attempt in tenacity.Retrying(
        stop=tenacity.stop_after_delay(120),
        wait=tenacity.wait_fixed(0.1),
        retry=tenacity.retry_if_exception_type((ApiException, AssertionError)),
        reraise=True,
    ):
        with attempt:
            assert _allowed(clients, rules[0]), f"rule {rules[0]} not in effect yet"
    return clients


def account_may(
    admin: K8sClients, user: str, verb: str, resource: str, group: str = "", sub: str = ""
) -> bool:
    """Whether the authorizer lets `user` (a ServiceAccount's user name) do `verb` on
    `resource` (its subresource `sub`) of `group`: a SubjectAccessReview asked as admin."""
    review = k8s.AuthorizationV1Api(admin.api_client).create_subject_access_review(
        {
            "spec": {
                "user": user,
                "groups": ["system:serviceaccounts", "system:authenticated"],
                "resourceAttributes": {
                    "verb": verb,
                    "group": group,
                    "resource": resource,
                    "subresource": sub,
                },
            }
        }
    )
    return bool(review.status.allowed)
