"""The profile's `nodeCommands`: how the suite restarts a node's kubelet, or the node, on a
cluster it did not create (on its own kind clusters it runs `systemctl restart kubelet` in
the node container, or restarts the container). Each command is an argv run on the harness
host with {node} and {kubeconfig} filled in (also exported as DRA_NODE and DRA_KUBECONFIG);
it must return once the restart is done."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.model.schema import (
    Problems,
    expand_argv,
    join,
    parse_argv_template,
    parse_duration,
)

PLACEHOLDERS = ("node", "kubeconfig")
ENV_NAMES = {"node": "DRA_NODE", "kubeconfig": "DRA_KUBECONFIG"}
_KEYS = ("restartKubelet", "restartNode", "timeout")
DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True)
class NodeCommands:
    restart_kubelet: tuple[str, ...] = ()  # empty: not given
    restart_node: tuple[str, ...] = ()  # a reboot; empty: not given
    timeout: float = DEFAULT_TIMEOUT

    def expand(self, argv: tuple[str, ...], node: str, kubeconfig: str) -> list[str]:
        return expand_argv(argv, {"node": node, "kubeconfig": kubeconfig})


def parse_node_commands(p: Problems, value: Any) -> NodeCommands:
    if value is None:
        return NodeCommands()
    section = p.mapping("nodeCommands", value, _KEYS)
    if section is None:
        return NodeCommands()
    argv = _argv(p, join("nodeCommands", "restartKubelet"), section.get("restartKubelet"))
    reboot = _argv(p, join("nodeCommands", "restartNode"), section.get("restartNode"))
    timeout = DEFAULT_TIMEOUT
    if "timeout" in section:
        seconds = parse_duration(section["timeout"])
        if seconds is None or seconds <= 0:
            p.wrong(
                "nodeCommands.timeout",
                "a positive duration in seconds (120) or with units (120s, 2m)",
                section["timeout"],
            )
        else:
            timeout = seconds
    return NodeCommands(argv, reboot, timeout)


def _argv(p: Problems, path: str, value: Any) -> tuple[str, ...]:
    return parse_argv_template(p, path, value, PLACEHOLDERS)
