"""Fixtures shared by the scenario suites (the harness's own fixtures come from
conformance/plugin/fixtures.py: dra_context, k8s, build, test_namespace, device_lease,
cluster_objects).

`workload` is the usual entry point: claims and pods in the test's namespace, waits, and what
a container sees through the profile's verification (conformance/scenario_api/workloads.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.kube.builders import Builders
from conformance.kube.client import K8sClients
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
    """Restarts of the driver's plugin pod; the driver is ready again on those nodes before
    the test's device lease is released."""
    restarts = DriverRestarts(dra_context, k8s)
    try:
        yield restarts
    finally:
        if restarts.restarted:
            restarts.wait_driver_ready()
