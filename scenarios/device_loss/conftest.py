"""Fixtures of the device-loss suite: fault injectors that undo themselves, and a driver
restart that always ends with the driver ready again.

Everything here is torn down before the test's device lease is released (each fixture depends
on `device_lease`), so the next test never meets a tainted, withdrawn or failing device.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s_client

from conformance.faults import (
    DeviceTaintRuleInjector,
    ProfileFaults,
)
from conformance.kube.client import K8sClients
from conformance.kube.daemonsets import restart_pod_on_node, wait_driver_ready
from conformance.run.context import RunContext


def _taint_rule_version(context: RunContext) -> str | None:
    group_version = context.device_taint_rule_api_version()
    return group_version.split("/", 1)[1] if group_version else None


@pytest.fixture
def taint_rules(
    dra_context: RunContext, k8s: K8sClients, device_lease: Any
) -> Iterator[DeviceTaintRuleInjector]:
    """DeviceTaintRules on single devices: works with every driver. Deleted after the test."""
    version = _taint_rule_version(dra_context)
    if version is None:
        pytest.fail(
            "the cluster enables DRADeviceTaintRules but serves no resource.k8s.io version "
            f"with devicetaintrules (served: {sorted(dra_context.served_resources)})"
        )
    injector = DeviceTaintRuleInjector(
        k8s_client.CustomObjectsApi(k8s.api_client), dra_context.run_id, api_version=version
    )
    try:
        yield injector
    finally:
        injector.restore()


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


class DriverRestarts:
    """Restart the driver's kubelet-plugin pod on a node (profile readiness.daemonSet)."""

    def __init__(self, context: RunContext, k8s: K8sClients) -> None:
        readiness = context.profile.readiness
        if not (readiness.daemonset_name and readiness.daemonset_namespace):
            pytest.fail(
                "the profile has no readiness.daemonSet: restarting the driver's kubelet "
                "plugin (DRA-LOSS-006) needs its DaemonSet {namespace, name}"
            )
        self.context = context
        self.k8s = k8s
        self.namespace: str = readiness.daemonset_namespace
        self.name: str = readiness.daemonset_name
        self.restarted: list[str] = []

    def restart(self, node: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Delete the plugin pod on `node`; returns (old, new) once the new one is ready."""
        self.restarted.append(node)
        return restart_pod_on_node(
            self.k8s,
            self.namespace,
            self.name,
            node,
            timeout=self.context.timeout("driverReady"),
        )

    def wait_driver_ready(self) -> None:
        wait_driver_ready(
            self.k8s, self.context.profile, timeout=self.context.timeout("driverReady")
        )


@pytest.fixture
def driver_restarts(
    dra_context: RunContext, k8s: K8sClients, device_lease: Any
) -> Iterator[DriverRestarts]:
    restarts = DriverRestarts(dra_context, k8s)
    try:
        yield restarts
    finally:
        if restarts.restarted:
            restarts.wait_driver_ready()
