"""Fixtures of the security suite: the accounts the driver runs as, found on the cluster."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from conformance.kube.access import driver_service_accounts
from conformance.kube.client import K8sClients
from conformance.model.outcome import not_run
from conformance.model.privileges import ServiceAccountRef, driver_namespaces
from conformance.run.context import RunContext


@pytest.fixture
def driver_accounts(dra_context: RunContext, k8s: K8sClients) -> tuple[ServiceAccountRef, ...]:
    """Every ServiceAccount a pod of the driver runs as (never empty: a driver whose accounts
    cannot be found is not run, never passed)."""
    profile = dra_context.profile
    if not driver_namespaces(profile):
        not_run(
            "the profile names no namespace of the driver, so its service accounts are unknown",
            "name the kubelet-plugin DaemonSet in the profile's readiness.daemonSet",
        )
    try:
        accounts = driver_service_accounts(k8s, profile)
    except ApiException as exc:
        if exc.status not in (401, 403):
            raise
        not_run(
            f"the harness may not read the driver's pods, DaemonSets or Deployments "
            f"(HTTP {exc.status})",
            f"run with credentials that may list them in {list(driver_namespaces(profile))}",
        )
    if not accounts:
        not_run(
            f"no pod, DaemonSet or Deployment of the driver in {list(driver_namespaces(profile))}",
            "install the driver, or name its DaemonSet in the profile's readiness.daemonSet",
        )
    return accounts
