"""Fixtures of the node-restart suite: restart a node's kubelet, or the node, through the run's
node access (conformance.node_access: the profile's `nodeCommands`, the kind node container, or
a privileged pod where the profile allows one), honouring the node's "no kubelet restart
before T" mark (conformance/run/node_marks.py). Where no way can restart it, the requirement
is not run. Each restart is proven by the kubelet's own process start time
(kubelet_restart_checks): a command that restarted nothing is an error of the
harness, not a result of the driver.

Every test leases its node whole (`@pytest.mark.dra_node_exclusive`): the broker hands out
nodes with a mark last, and the restart waits for a mark that is still on the leased node.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubelet_restart_checks import KubeletStarts

from conformance.kube.client import K8sClients
from conformance.kube.daemonsets import wait_driver_ready
from conformance.model.outcome import not_run
from conformance.node_access import NodeAccess, Operation, not_run_unless_available
from conformance.observe.steps import step
from conformance.run.context import RunContext
from conformance.run.node_marks import wait_until_kubelet_restart_allowed

# The longest mark known: DRA-EXT-006's device-plugin grace period (5 min and slack).
LONGEST_MARK_SECONDS = 360.0


class NodeRestarts:
    """Restart the kubelet of the leased node; after a restart the teardown waits until the
    driver is ready everywhere again, so the next test finds its slices."""

    def __init__(
        self, context: RunContext, k8s: K8sClients, lease: Any, access: NodeAccess
    ) -> None:
        self.context = context
        self.k8s = k8s
        self.lease = lease
        self.access = access
        self.restarted: list[str] = []
        self.starts = KubeletStarts(k8s, context.harness_dir)

    def check_possible(self, node: str) -> None:
        """Not run unless the kubelet of `node` can be restarted."""
        with not_run_unless_available():
            self.access.require(Operation.RESTART_KUBELET, node)

    def check_reboot_possible(self, node: str) -> None:
        """Not run unless `node` can be restarted."""
        with not_run_unless_available():
            self.access.require(Operation.RESTART_NODE, node)

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
        self.check_possible(node)
        self.wait_restart_allowed(node)
        how = self.access.how(Operation.RESTART_KUBELET, node)
        started = self.starts.before(node)
        with step(f"restart the kubelet of node {node} ({how})"):
            self.restarted.append(node)
            self.access.restart_kubelet(node)
        self._prove(node, started, how)

    def restart_node(self, node: str) -> None:
        """Reboot `node` (its kubelet restarts too, so the node's mark is waited out)."""
        self.check_reboot_possible(node)
        self.wait_restart_allowed(node)
        how = self.access.how(Operation.RESTART_NODE, node)
        started = self.starts.before(node)
        with step(f"restart node {node} ({how})"):
            self.restarted.append(node)
            self.access.restart_node(node)
        self._prove(node, started, how)

    def _prove(self, node: str, started: float | None, how: str) -> None:
        with step(f"wait until the kubelet of node {node} runs as a new process", is_wait=True):
            self.starts.prove_restarted(
                node, started, how=how, timeout=self.context.timeout("driverReady")
            )

    def wait_driver_ready(self) -> None:
        wait_driver_ready(
            self.k8s,
            self.context.profile,
            timeout=self.context.timeout("driverReady"),
            nodes=self.restarted,  # another test may be disrupting another node meanwhile
        )


@pytest.fixture
def node_restarts(
    dra_context: RunContext, k8s: K8sClients, device_lease: Any, node_access: NodeAccess
) -> Iterator[NodeRestarts]:
    restarts = NodeRestarts(dra_context, k8s, device_lease, node_access)
    try:
        yield restarts
    finally:
        if restarts.restarted:
            restarts.wait_driver_ready()
