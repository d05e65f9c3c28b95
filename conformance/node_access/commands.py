"""Nodes reached by the profile's `nodeCommands`: argv templates run on the harness host
(conformance.model.node_commands). A restart is its command; reading a file, listing CDI specs
or the kubelet's log is `exec` with the command appended."""

from __future__ import annotations

import os
import subprocess

from conformance.model.node_commands import NodeCommands
from conformance.node_access.interface import NodeAccess, Operation

DOCS = "docs/profile.md"

# operation -> the nodeCommands field that does it
FIELDS = {
    Operation.RESTART_KUBELET: "restartKubelet",
    Operation.RESTART_NODE: "restartNode",
    Operation.STOP_NODE: "stopNode",
    Operation.START_NODE: "startNode",
    Operation.RUN: "exec",
}


def run_node_command(name: str, argv: list[str], node: str, kubeconfig: str, timeout: float) -> str:
    """Run the profile's `nodeCommands.<name>` (already expanded) on this host; its standard
    output. A failure is one line naming the command."""
    shown = " ".join(argv)
    env = {**os.environ, "DRA_NODE": node, "DRA_KUBECONFIG": kubeconfig}
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError:
        raise RuntimeError(f"nodeCommands.{name}: no executable {argv[0]!r}") from None
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"nodeCommands.{name} `{shown}` timed out after {timeout:g}s") from None
    if done.returncode != 0:
        last = [ln.strip() for ln in (done.stderr or "").splitlines() if ln.strip()][-1:]
        raise RuntimeError(
            f"nodeCommands.{name} `{shown}` exited {done.returncode}"
            + (f": {last[0][:300]}" if last else "")
        )
    return done.stdout


class ProfileNodeCommands(NodeAccess):
    def __init__(self, commands: NodeCommands, kubeconfig: str, timeout_scale: float = 1.0):
        self.commands = commands
        self.kubeconfig = kubeconfig
        self.timeout = commands.timeout * timeout_scale
        self.describe = "the profile's nodeCommands"

    def template(self, op: Operation) -> tuple[str, ...]:
        c = self.commands
        return {
            Operation.RESTART_KUBELET: c.restart_kubelet,
            Operation.RESTART_NODE: c.restart_node,
            Operation.STOP_NODE: c.stop_node,
            Operation.START_NODE: c.start_node,
            Operation.RUN: c.exec,
        }.get(op, ())

    def refusal(self, op: Operation, node: str) -> tuple[str, str] | None:
        if self.template(op):
            return None
        field = FIELDS.get(op)
        if field is None:
            return "", ""  # no command for it: never this way
        return (
            f"the profile names no nodeCommands.{field}",
            f"set nodeCommands.{field} in the profile ({DOCS})",
        )

    def argv(self, op: Operation, node: str, extra: list[str] | None = None) -> list[str]:
        return self.commands.expand(self.template(op), node, self.kubeconfig) + (extra or [])

    def how(self, op: Operation, node: str) -> str:
        return " ".join(self.argv(op, node)) if self.template(op) else self.describe

    def _do(self, op: Operation, node: str, extra: list[str] | None = None) -> str:
        argv = self.argv(op, node, extra)
        return run_node_command(FIELDS[op], argv, node, self.kubeconfig, self.timeout)

    def _restart_kubelet(self, node: str) -> None:
        self._do(Operation.RESTART_KUBELET, node)

    def _restart_node(self, node: str) -> None:
        self._do(Operation.RESTART_NODE, node)

    def _stop_node(self, node: str) -> None:
        self._do(Operation.STOP_NODE, node)

    def _start_node(self, node: str) -> None:
        self._do(Operation.START_NODE, node)

    def _run(self, node: str, argv: list[str]) -> str:
        return self._do(Operation.RUN, node, argv)
