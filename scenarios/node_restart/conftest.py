"""Fixtures of the node-restart suite: restart a node's kubelet (and, on kind, the node),
honouring the node's "no kubelet restart before T" mark (conformance/run/node_marks.py).

A kubelet restart is `systemctl restart kubelet` in the kind node container; on any other
cluster the requirement is not run. Every test leases its node whole
(`@pytest.mark.dra_node_exclusive`): the broker hands out nodes with a mark last, and the
restart waits for a mark that is still on the leased node.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.kube import nodes
from conformance.kube.client import K8sClients
from conformance.kube.daemonsets import wait_driver_ready
from conformance.model.outcome import not_run
from conformance.report.steps import step
from conformance.run.context import RunContext
from conformance.run.node_marks import wait_until_kubelet_restart_allowed

# The longest mark known: DRA-EXT-006's device-plugin grace period (5 min and slack).
LONGEST_MARK_SECONDS = 360.0


class NodeRestarts:
    """Restart the kubelet of the leased node; after a restart the teardown waits until the
    driver is ready everywhere again, so the next test finds its slices."""

    def __init__(self, context: RunContext, k8s: K8sClients, lease: Any) -> None:
        self.context = context
        self.k8s = k8s
        self.lease = lease
        self.restarted: list[str] = []

    def container(self, node: str) -> str:
        """The kind node container of `node`, or not run: nothing else can restart a kubelet."""
        cluster = self.context.cluster
        container = cluster.node_containers.get(node)
        if cluster.provider != "kind" or not container:
            not_run(
                f"the kubelet of node {node} cannot be restarted: the suite restarts it with "
                f"systemctl in a kind node container, and this is a {cluster.provider} cluster",
                "run this requirement on a kind cluster created by dra-conformance",
            )
        return container

    def wait_restart_allowed(self, node: str) -> None:
        """Wait out the node's "no kubelet restart" mark, or not run if it lasts too long."""
        with step(f"wait until node {node} has no no-kubelet-restart mark", is_wait=True):
            try:
                wait_until_kubelet_restart_allowed(
                    self.lease.book,
                    node,
                    timeout=LONGEST_MARK_SECONDS * self.context.timeout_scale,
                )
            except TimeoutError as exc:
                not_run(str(exc), "run this requirement again once the mark has expired")

    def restart_kubelet(self, node: str) -> None:
        container = self.container(node)
        self.wait_restart_allowed(node)
        with step(f"restart the kubelet of node {node} (systemctl restart kubelet)"):
            self.restarted.append(node)
            nodes.restart_kubelet(container)

    def wait_driver_ready(self) -> None:
        wait_driver_ready(
            self.k8s, self.context.profile, timeout=self.context.timeout("driverReady")
        )


@pytest.fixture
def node_restarts(
    dra_context: RunContext, k8s: K8sClients, device_lease: Any
) -> Iterator[NodeRestarts]:
    restarts = NodeRestarts(dra_context, k8s, device_lease)
    try:
        yield restarts
    finally:
        if restarts.restarted:
            restarts.wait_driver_ready()
