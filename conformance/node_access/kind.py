"""Nodes of a kind cluster the harness made: each node is a Docker container, reached with the
Docker SDK (commands run with `exec`, a reboot is a container restart)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance import docker_client
from conformance.node_access.interface import InPlaceUpgrade, NodeAccess, Operation

_REMEDY = "run on a kind cluster created by dra-conformance"


class KindNodeContainers(NodeAccess):
    """`containers`: node name -> its container; empty when the cluster is not a kind cluster
    of the harness (then every operation is refused with `not_kind`)."""

    def __init__(self, cluster: str, containers: Mapping[str, str], not_kind: str = "") -> None:
        self.cluster = cluster
        self.containers = dict(containers)
        self.not_kind = not_kind
        self.describe = "the kind node containers"

    def refusal(self, op: Operation, node: str) -> tuple[str, str] | None:
        if self.not_kind:
            return self.not_kind, _REMEDY
        if op is Operation.UPGRADE or node in self.containers:
            return None
        return f"kind cluster {self.cluster} has no node container for node {node}", _REMEDY

    def how(self, op: Operation, node: str) -> str:
        container = self.containers.get(node, node)
        return {
            Operation.RESTART_KUBELET: "systemctl restart kubelet",
            Operation.RESTART_NODE: f"restart of kind node container {container}",
            Operation.STOP_NODE: f"stop of kind node container {container}",
            Operation.START_NODE: f"start of kind node container {container}",
        }.get(op, f"in kind node container {container}")

    def _container(self, node: str) -> Any:
        return docker_client.client().containers.get(self.containers[node])

    def _restart_kubelet(self, node: str) -> None:
        """`systemctl restart kubelet` in the node container (re-registers a deleted Node)."""
        self._run(node, ["systemctl", "restart", "kubelet"])

    def _run(self, node: str, argv: list[str]) -> str:
        code, output = self._container(node).exec_run(argv, demux=True)
        out, err = (b.decode(errors="replace") if b else "" for b in output)
        if code != 0:
            raise RuntimeError(
                f"{' '.join(argv)} in kind node container {self.containers[node]} exited "
                f"{code}: {(err or out)[-2000:]}"
            )
        return out

    def _restart_node(self, node: str) -> None:
        from conformance.node_access.kind_restart import restart_keeping_addresses

        restart_keeping_addresses(self._container(node))

    def _stop_node(self, node: str) -> None:
        self._container(node).stop(timeout=10)

    def _start_node(self, node: str) -> None:
        self._container(node).start()

    def _host_path(self, node: str, path: str) -> Path:
        """Through the node container's root in /proc (needs root on the Docker host)."""
        pid = self._container(node).attrs["State"]["Pid"]
        return Path(f"/proc/{pid}/root{path}")

    def _in_place_upgrade(self, target: str, **kwargs: Any) -> InPlaceUpgrade:
        from conformance.cluster.upgrade import KindUpgrade

        return KindUpgrade(self.cluster, target, **kwargs)
