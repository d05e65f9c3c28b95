"""Restart the driver's kubelet-plugin pod on a node (the profile's readiness.daemonSet), for
the suites that disrupt the driver itself (device loss, lifecycle); the `driver_restarts`
fixture (scenarios/conftest.py) waits for the driver to be ready again after the test."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.kube.client import K8sClients
from conformance.kube.daemonsets import restart_pod_on_node, wait_driver_ready
from conformance.run.context import RunContext


class DriverRestarts:
    """Restart the driver's kubelet-plugin pod on a node (profile readiness.daemonSet)."""

    def __init__(self, context: RunContext, k8s: K8sClients) -> None:
        readiness = context.profile.readiness
        if not (readiness.daemonset_name and readiness.daemonset_namespace):
            pytest.fail(
                "the profile has no readiness.daemonSet: restarting the driver's kubelet "
                "plugin (DRA-LOSS-006, DRA-LOSS-012, DRA-LIFE-003, DRA-LIFE-004) needs its "
                "DaemonSet {namespace, name}"
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
            self.k8s,
            self.context.profile,
            timeout=self.context.timeout("driverReady"),
            nodes=self.restarted,  # another test may be disrupting another node meanwhile
        )
