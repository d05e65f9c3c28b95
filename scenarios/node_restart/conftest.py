"""Fixtures of the node-restart suite: restart a node's kubelet (and, on kind, the node),
honouring the node's "no kubelet restart before T" mark (conformance/run/node_marks.py).

A kubelet restart is the profile's `nodeCommands.restartKubelet` if it names one, else
`systemctl restart kubelet` in the kind node container; without either it is not run.
Every test leases its node whole (`@pytest.mark.dra_node_exclusive`): the broker hands out
nodes with a mark last, and the restart waits for a mark that is still on the leased node.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.kube import kubelet, nodes
from conformance.kube.client import K8sClients
from conformance.kube.daemonsets import wait_driver_ready
from conformance.model.outcome import not_run
from conformance.observe.steps import step
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

    def check_possible(self, node: str) -> None:
        """Not run unless the kubelet of `node` can be restarted: by the profile's
        `nodeCommands.restartKubelet`, or in the node container of a kind cluster."""
        if self.context.profile.node_commands.restart_kubelet:
            return
        cluster = self.context.cluster
        if cluster.provider != "kind" or not cluster.node_containers.get(node):
            not_run(
                f"the kubelet of node {node} cannot be restarted: the profile names no "
                f"nodeCommands.restartKubelet, and this {cluster.provider} cluster has no "
                "kind node container to restart it in",
                "set nodeCommands.restartKubelet in the profile (docs/profile.md), or run on "
                "a kind cluster created by dra-conformance",
            )

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
        cluster = self.context.cluster
        command = self.context.profile.node_commands.restart_kubelet
        if command:
            self._run_profile_command("restartKubelet", command, node, "restart the kubelet of")
            return
        with step(f"restart the kubelet of node {node} (systemctl restart kubelet)"):
            self.restarted.append(node)
            nodes.restart_kubelet(cluster.node_containers[node])

    def check_reboot_possible(self, node: str) -> None:
        """Not run unless `node` can be restarted: by the profile's `nodeCommands.restartNode`,
        or as the node container of a kind cluster."""
        if self.context.profile.node_commands.restart_node:
            return
        cluster = self.context.cluster
        if cluster.provider != "kind" or not cluster.node_containers.get(node):
            not_run(
                f"node {node} cannot be restarted: the profile names no "
                f"nodeCommands.restartNode, and this {cluster.provider} cluster has no kind "
                "node container to restart",
                "set nodeCommands.restartNode in the profile (docs/profile.md), or run on a "
                "kind cluster created by dra-conformance",
            )

    def restart_node(self, node: str) -> None:
        """Reboot `node` (its kubelet restarts too, so the node's mark is waited out)."""
        self.check_reboot_possible(node)
        self.wait_restart_allowed(node)
        cluster = self.context.cluster
        command = self.context.profile.node_commands.restart_node
        if command:
            self._run_profile_command("restartNode", command, node, "restart")
            return
        container = cluster.node_containers[node]
        with step(f"restart node {node} (restart of kind node container {container})"):
            self.restarted.append(node)
            nodes.restart_node_container(container)

    def _run_profile_command(
        self, field: str, template: tuple[str, ...], node: str, action: str
    ) -> None:
        """The profile's `nodeCommands.<field>` for `node`, as the step "<action> node N: argv"."""
        commands = self.context.profile.node_commands
        kubeconfig = self.context.cluster.kubeconfig
        argv = commands.expand(template, node, kubeconfig)
        with step(f"{action} node {node}: {' '.join(argv)}"):
            self.restarted.append(node)
            kubelet.run_node_command(
                field, argv, node, kubeconfig, commands.timeout * self.context.timeout_scale
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
    dra_context: RunContext, k8s: K8sClients, device_lease: Any
) -> Iterator[NodeRestarts]:
    restarts = NodeRestarts(dra_context, k8s, device_lease)
    try:
        yield restarts
    finally:
        if restarts.restarted:
            restarts.wait_driver_ready()
