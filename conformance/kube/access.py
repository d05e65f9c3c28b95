"""Who the driver runs as, and what the authorizer lets those accounts do: SubjectAccessReviews
(authorization.k8s.io/v1) for the checks of `conformance.model.privileges`.

A review asks the API server's own authorizer chain (RBAC, Node, webhooks), so a grant from
any source is seen, and nothing is changed on the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes import client as k8s_client

from conformance.kube.client import K8sClients
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.model.driver_workloads import (
    DriverMarks,
    accounts_of_workloads,
    driver_workloads,
)
from conformance.model.privileges import AccessCheck, ServiceAccountRef, Violation

# Reviews at once: few, the API server answers each in milliseconds (the client pools 5 per
# core).
PARALLEL_REVIEWS = 4


def review(api_client: Any, account: ServiceAccountRef, check: AccessCheck) -> tuple[bool, str]:
    """(allowed, the authorizer's reason) for `account` doing `check`."""
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": account.user,
            "groups": list(account.groups),
            "resourceAttributes": check.resource_attributes(),
        },
    }
    result = k8s_client.AuthorizationV1Api(api_client).create_subject_access_review(
        body, field_manager=FIELD_MANAGER
    )
    status = result.status
    return bool(status.allowed), str(status.reason or status.evaluation_error or "")


def violations(
    api_client: Any, accounts: Iterable[ServiceAccountRef], checks: Iterable[AccessCheck]
) -> list[Violation]:
    """Every (account, check) the authorizer allows, in the order given. The reviews are
    independent, so a few go at once (a requirement's dozens take well under a second)."""
    pairs = [(account, check) for account in accounts for check in checks]
    with ThreadPoolExecutor(max_workers=PARALLEL_REVIEWS) as pool:
        answers = list(pool.map(lambda pair: review(api_client, *pair), pairs))
    return [
        Violation(account, check, reason)
        for (account, check), (allowed, reason) in zip(pairs, answers, strict=True)
        if allowed
    ]


def cluster_workloads(k8s: K8sClients) -> list[tuple[str, dict[str, Any]]]:
    """(kind, object) of every workload in all namespaces (the kinds of
    `driver_workloads.WORKLOAD_KINDS`)."""
    batch = k8s_client.BatchV1Api(k8s.api_client)
    listings = (
        ("Pod", k8s.core.list_pod_for_all_namespaces),
        ("DaemonSet", k8s.apps.list_daemon_set_for_all_namespaces),
        ("Deployment", k8s.apps.list_deployment_for_all_namespaces),
        ("StatefulSet", k8s.apps.list_stateful_set_for_all_namespaces),
        ("ReplicaSet", k8s.apps.list_replica_set_for_all_namespaces),
        ("Job", batch.list_job_for_all_namespaces),
        ("CronJob", batch.list_cron_job_for_all_namespaces),
    )
    return [(kind, k8s.to_dict(item)) for kind, listing in listings for item in listing().items]


def driver_service_accounts(k8s: K8sClients, marks: DriverMarks) -> tuple[ServiceAccountRef, ...]:
    """The accounts the driver's workloads run as, in all namespaces (see
    `conformance.model.driver_workloads` for which workloads are the driver's)."""
    return accounts_of_workloads(driver_workloads(cluster_workloads(k8s), marks))
