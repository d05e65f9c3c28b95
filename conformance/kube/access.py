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
from kubernetes.client.exceptions import ApiException

from conformance.kube.client import K8sClients
from conformance.model.privileges import (
    SHARED_NAMESPACES,
    AccessCheck,
    ServiceAccountRef,
    Violation,
    accounts_of,
    driver_namespaces,
)
from conformance.model.profile import Profile

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
    result = k8s_client.AuthorizationV1Api(api_client).create_subject_access_review(body)
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


def _template_specs(items: Iterable[Any], k8s: K8sClients) -> list[Any]:
    return [((k8s.to_dict(i).get("spec") or {}).get("template") or {}).get("spec") for i in items]


def driver_service_accounts(k8s: K8sClients, profile: Profile) -> tuple[ServiceAccountRef, ...]:
    """The accounts the driver's pods run as: every pod, DaemonSet and Deployment of the
    driver's own namespaces; in a shared namespace (kube-system, ...) only the readiness
    DaemonSet's template. Templates count too, so an account is found while its pods restart."""
    found: set[ServiceAccountRef] = set()
    ds_namespace, ds_name = profile.readiness.daemonset_namespace, profile.readiness.daemonset_name
    if ds_namespace and ds_name:
        try:
            ds = k8s.apps.read_namespaced_daemon_set(ds_name, ds_namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
        else:
            found |= accounts_of(ds_namespace, _template_specs([ds], k8s))
    for namespace in driver_namespaces(profile):
        if namespace in SHARED_NAMESPACES:
            continue
        pods = k8s.core.list_namespaced_pod(namespace).items
        found |= accounts_of(namespace, (k8s.to_dict(p).get("spec") for p in pods))
        for listing in (k8s.apps.list_namespaced_daemon_set, k8s.apps.list_namespaced_deployment):
            found |= accounts_of(namespace, _template_specs(listing(namespace).items, k8s))
    return tuple(sorted(found))
