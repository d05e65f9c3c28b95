"""The profile's `nodeCommands`: how the suite restarts a node's kubelet, or the node, on a
cluster it did not create (on its own kind clusters it runs `systemctl restart kubelet` in
the node container, or restarts the container). Each command is an argv run on the harness
host with {node} and {kubeconfig} filled in (also exported as DRA_NODE and DRA_KUBECONFIG);
it must return once the restart is done."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from conformance.model.schema import expand_argv
from conformance.model.typed import Strict, argv, duration

PLACEHOLDERS = ("node", "kubeconfig")
ENV_NAMES = {"node": "DRA_NODE", "kubeconfig": "DRA_KUBECONFIG"}
DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True)
class NodeCommands:
    restart_kubelet: tuple[str, ...] = ()  # empty: not given
    restart_node: tuple[str, ...] = ()  # a reboot; empty: not given
    timeout: float = DEFAULT_TIMEOUT

    def expand(self, argv: tuple[str, ...], node: str, kubeconfig: str) -> list[str]:
        return expand_argv(argv, {"node": node, "kubeconfig": kubeconfig})


Argv = argv(PLACEHOLDERS)
Timeout = duration("a positive duration in seconds (120) or with units (120s, 2m)")


class NodeCommandsSection(Strict):
    """`nodeCommands`: argv templates run on the harness host, {node} and {kubeconfig} filled."""

    restart_kubelet: Argv = Field((), description="an argv restarting the node's kubelet")
    restart_node: Argv = Field((), description="an argv rebooting the node")
    timeout: Timeout = Field(DEFAULT_TIMEOUT, description="how long a command may take")

    def domain(self) -> NodeCommands:
        return NodeCommands(self.restart_kubelet, self.restart_node, self.timeout)
