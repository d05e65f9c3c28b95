"""The chart deploy/chart/ rendered by helm for chosen suites and applied to a real API server:
its authorizer grants the account what those suites need and refuses what only other suites
need — the security and core suites read every workload and ask SubjectAccessReviews without
cluster-admin (core for the device-status rights), the allocation suite gets neither."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.rbac_chart import render_account
from kube_apiserver.access import account_may
from kube_apiserver.server import ClusterScoped

from conformance.kube.client import K8sClients

NAMESPACE = "dra-conformance-chart"

Check = tuple[str, str, str]  # (verb, resource[/subresource], API group)
EVERY_SUITE_NEEDS: tuple[Check, ...] = (
    ("create", "namespaces", ""),
    ("create", "pods", ""),
    ("create", "resourceclaims", "resource.k8s.io"),
    ("get", "nodes/proxy", ""),
    ("update", "configmaps", ""),
    ("create", "pods/exec", ""),  # a container restarted by killing its process
)
WORKLOAD_REVIEW_NEEDS: tuple[Check, ...] = (
    ("create", "subjectaccessreviews", "authorization.k8s.io"),
    ("list", "serviceaccounts", ""),
    ("list", "statefulsets", "apps"),
    ("list", "jobs", "batch"),
    ("list", "cronjobs", "batch"),
)
OTHER_SUITES_NEED: tuple[Check, ...] = (
    ("create", "devicetaintrules", "resource.k8s.io"),  # device_loss
    ("create", "priorityclasses", "scheduling.k8s.io"),  # no_preemption
    ("create", "pods/eviction", ""),  # node_drain
    ("patch", "daemonsets", "apps"),  # driver_update
)


def _apply(admin: K8sClients, scoped: ClusterScoped, documents: list[dict[str, Any]]) -> None:
    for document in documents:
        if document["kind"] == "ServiceAccount":
            admin.core.create_namespaced_service_account(NAMESPACE, document)
        else:
            scoped.create(document)


def _allowed(admin: K8sClients, account: str, check: Check) -> bool:
    verb, resource, group = check
    resource, _, sub = resource.partition("/")
    user = f"system:serviceaccount:{NAMESPACE}:{account}"
    return account_may(admin, user, verb, resource, group, sub)


@pytest.fixture
def chart_namespace(cluster_scoped: ClusterScoped) -> str:
    cluster_scoped.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    )
    return NAMESPACE


def test_a_role_per_selection_of_suites(
    apiserver_k8s: K8sClients, cluster_scoped: ClusterScoped, chart_namespace: str
) -> None:
    _apply(
        apiserver_k8s,
        cluster_scoped,
        render_account(NAMESPACE, ("allocation",), account="only-allocation"),
    )
    _apply(
        apiserver_k8s,
        cluster_scoped,
        render_account(NAMESPACE, ("core", "security"), account="core-and-security"),
    )
    for check in EVERY_SUITE_NEEDS:
        assert _allowed(apiserver_k8s, "only-allocation", check), check
        assert _allowed(apiserver_k8s, "core-and-security", check), check
    for check in WORKLOAD_REVIEW_NEEDS:
        assert not _allowed(apiserver_k8s, "only-allocation", check), check
        assert _allowed(apiserver_k8s, "core-and-security", check), check
    for check in OTHER_SUITES_NEED:
        assert not _allowed(apiserver_k8s, "core-and-security", check), check
    assert not _allowed(apiserver_k8s, "core-and-security", ("list", "secrets", ""))
