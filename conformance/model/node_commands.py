"""The profile's `nodeCommands`: how the suite reaches a node of a cluster it did not create
(on its own kind clusters it works in the node containers). Each command is an argv run on the
harness host with {node} and {kubeconfig} filled in (also exported as DRA_NODE and
DRA_KUBECONFIG); a restart command must return once the restart is done. `exec` is a prefix
the suite appends a command to (`ssh {node} --`) to read a node's files or its kubelet's log.
`privilegedPod` allows the suite to do the same through a short-lived privileged pod on the
node instead (hostPID, entering the host's namespaces), in the namespace it names."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from conformance.model.schema import expand_argv
from conformance.model.typed import Strict, argv, duration, text

PLACEHOLDERS = ("node", "kubeconfig")
ENV_NAMES = {"node": "DRA_NODE", "kubeconfig": "DRA_KUBECONFIG"}
DEFAULT_TIMEOUT = 120.0
# kubeadm (and kind) clusters admit privileged pods there; elsewhere the profile names one.
DEFAULT_PRIVILEGED_NAMESPACE = "kube-system"


@dataclass(frozen=True)
class NodeCommands:
    restart_kubelet: tuple[str, ...] = ()  # empty: not given
    restart_node: tuple[str, ...] = ()  # a reboot; empty: not given
    timeout: float = DEFAULT_TIMEOUT
    stop_node: tuple[str, ...] = ()  # a power-off; empty: not given
    start_node: tuple[str, ...] = ()  # a power-on, returning once the node runs
    exec: tuple[str, ...] = ()  # a prefix: the command to run on the node is appended
    privileged_pod_namespace: str | None = None  # None: no privileged pods

    def expand(self, argv: tuple[str, ...], node: str, kubeconfig: str) -> list[str]:
        return expand_argv(argv, {"node": node, "kubeconfig": kubeconfig})


Argv = argv(PLACEHOLDERS)
Timeout = duration("a positive duration in seconds (120) or with units (120s, 2m)")


class PrivilegedPodSection(Strict):
    """`nodeCommands.privilegedPod`: node operations through a privileged pod are allowed."""

    namespace: text("a namespace name") = Field(  # type: ignore[valid-type]
        DEFAULT_PRIVILEGED_NAMESPACE,
        description="where the privileged pods go (Pod Security level privileged)",
    )


class NodeCommandsSection(Strict):
    """`nodeCommands`: argv templates run on the harness host, {node} and {kubeconfig} filled."""

    restart_kubelet: Argv = Field((), description="an argv restarting the node's kubelet")
    restart_node: Argv = Field((), description="an argv rebooting the node")
    stop_node: Argv = Field((), description="an argv powering the node off")
    start_node: Argv = Field((), description="an argv powering the node on again")
    exec: Argv = Field((), description="an argv prefix running the appended command on the node")
    privileged_pod: PrivilegedPodSection | None = Field(
        None, description="allow node operations through a short-lived privileged pod"
    )
    timeout: Timeout = Field(DEFAULT_TIMEOUT, description="how long a command may take")

    def domain(self) -> NodeCommands:
        return NodeCommands(
            self.restart_kubelet,
            self.restart_node,
            self.timeout,
            self.stop_node,
            self.start_node,
            self.exec,
            self.privileged_pod.namespace if self.privileged_pod else None,
        )
