"""Fixtures shared by the scenario suites (the harness's own fixtures come from
conformance/plugin/fixtures.py: dra_context, k8s, build, test_namespace, device_lease,
cluster_objects).

`workload` is the usual entry point: claims and pods in the test's namespace, waits, and what
a container sees through the profile's verification (conformance/scenario_api/workloads.py).
`driver_accounts` are the ServiceAccounts the driver runs as (the security suite, and the
rights a capability needs).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from conformance.faults import ProfileFaults
from conformance.install.errors import InstallError
from conformance.install.identity import install_objects
from conformance.kube.access import driver_service_accounts
from conformance.kube.builders import Builders
from conformance.kube.client import K8sClients
from conformance.model.driver_workloads import WORKLOAD_KINDS, DriverMarks
from conformance.model.outcome import HarnessError, not_run
from conformance.model.privileges import ServiceAccountRef
from conformance.observe.steps import step
from conformance.run.context import RunContext
from conformance.scenario_api.driver_restarts import DriverRestarts
from conformance.scenario_api.workloads import Workloads


@pytest.fixture
def workload(
    request: pytest.FixtureRequest,
    dra_context: RunContext,
    k8s: K8sClients,
    build: Builders,
    test_namespace: str,
) -> Workloads:
    """Claims and pods of this test (its namespace is deleted after it, freeing devices)."""
    return Workloads(k8s, build, test_namespace, dra_context, request)


@pytest.fixture
def profile(dra_context: RunContext) -> Any:
    """The driver profile of the run (conformance.model.profile.Profile)."""
    return dra_context.profile


@pytest.fixture
def driver_restarts(
    dra_context: RunContext, k8s: K8sClients, device_lease: Any
) -> Iterator[DriverRestarts]:
    """Restarts of the driver's plugin pod; after one, the driver is ready again on the
    restarted nodes before the test's device lease is released."""
    restarts = DriverRestarts(dra_context, k8s)
    try:
        yield restarts
    finally:
        if restarts.restarted:
            restarts.wait_driver_ready()


@pytest.fixture
def driver_accounts(dra_context: RunContext, k8s: K8sClients) -> tuple[ServiceAccountRef, ...]:
    """Every ServiceAccount a workload of the driver runs as, in all namespaces (never empty:
    a driver whose accounts cannot be found is not run, never passed)."""
    profile = dra_context.profile
    try:
        marks = DriverMarks.of(profile, install_objects(profile))
    except InstallError as exc:
        raise HarnessError(f"cannot read what the driver's manifests create: {exc}") from None
    if not (marks.namespaces or marks.objects or marks.releases):
        not_run(
            "the profile names no namespace, DaemonSet or Helm release of the driver, so its "
            "service accounts are unknown",
            "name the kubelet-plugin DaemonSet in the profile's readiness.daemonSet",
        )
    kinds = ", ".join(WORKLOAD_KINDS)
    with step(f"find the driver's workloads ({kinds}) in all namespaces: {marks.describe()}"):
        try:
            accounts = driver_service_accounts(k8s, marks)
        except ApiException as exc:
            if exc.status not in (401, 403):
                raise
            not_run(
                f"the harness may not list every workload of the cluster (HTTP {exc.status})",
                f"run with credentials that may list {kinds} in all namespaces",
            )
    if not accounts:
        not_run(
            f"no workload of the driver found ({marks.describe()})",
            "install the driver, or name its DaemonSet in the profile's readiness.daemonSet",
        )
    return accounts


@pytest.fixture
def faults(dra_context: RunContext, k8s: K8sClients, device_lease: Any) -> Iterator[ProfileFaults]:
    """`faults.new(FaultKind.X)`: an injector per the profile's faults.<kind>; all restored
    after the test (a fault that cannot be injected or undone raises FaultError)."""
    made = ProfileFaults(dra_context, k8s)
    try:
        yield made
    finally:
        errors = made.restore_all()
        if errors:
            pytest.fail("could not undo injected faults: " + "; ".join(errors))
