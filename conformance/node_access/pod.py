"""Nodes reached through a short-lived privileged pod pinned to the node, where the profile
allows it (`nodeCommands.privilegedPod`): the pod shares the host's PID namespace and runs the
command with `nsenter` in the namespaces of the host's init, so it sees the node's files,
systemd and journal as a shell on the node would. One pod per command, deleted afterwards."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException

from conformance.kube import objects, state
from conformance.kube.client import K8sClients
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.kube.waits import wait_until
from conformance.model.naming import RUN_LABEL
from conformance.node_access.interface import NodeAccess, Operation

DOCS = "docs/profile.md"
# What a privileged pod can do: a reboot or power-off would take the pod down with the node
# before it could say it worked, and the harness host is not the node's.
CAN = (Operation.RESTART_KUBELET, Operation.RUN)
CONTAINER = "node"


def host_command(argv: list[str]) -> list[str]:
    """`argv` in the mount, UTS, IPC, network and PID namespaces of the host's PID 1."""
    return ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", *argv]


def pod_name(node: str, argv: list[str]) -> str:
    digest = hashlib.sha256(f"{node}\0{argv}\0{time.time_ns()}".encode()).hexdigest()[:10]
    return f"dra-node-access-{digest}"


def privileged_pod(
    name: str, namespace: str, node: str, image: str, argv: list[str], run_id: str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {RUN_LABEL: run_id}},
        "spec": {
            "nodeName": node,  # no scheduler: also on a cordoned or tainted node
            "hostPID": True,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": CONTAINER,
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": host_command(argv),
                    "securityContext": {"privileged": True},
                }
            ],
        },
    }


def exit_code(pod: dict[str, Any] | None) -> int | None:
    for status in ((pod or {}).get("status") or {}).get("containerStatuses") or ():
        terminated = (status.get("state") or {}).get("terminated")
        if terminated:
            return int(terminated.get("exitCode", -1))
    return None


class PrivilegedPods(NodeAccess):
    """`clients` makes the API clients (once, on first use); `namespace` None: the profile
    does not allow privileged pods."""

    def __init__(
        self,
        clients: Callable[[], K8sClients],
        namespace: str | None,
        image: str,
        run_id: str,
        timeout: float,
    ) -> None:
        self._clients = clients
        self._k8s: K8sClients | None = None
        self.namespace = namespace
        self.image = image
        self.run_id = run_id
        self.timeout = timeout
        self.describe = f"a privileged pod in namespace {namespace}"

    def refusal(self, op: Operation, node: str) -> tuple[str, str] | None:
        if op not in CAN:
            return "", ""  # never this way
        if self.namespace is None:
            return (
                "the profile does not allow privileged pods on nodes",
                f"set nodeCommands.privilegedPod in the profile ({DOCS})",
            )
        if not self.image:
            return "the run has no workload image for the privileged pod", ""
        return None

    def how(self, op: Operation, node: str) -> str:
        return f"{self.describe} (nsenter into the host)"

    @property
    def k8s(self) -> K8sClients:
        if self._k8s is None:
            self._k8s = self._clients()
        return self._k8s

    def _restart_kubelet(self, node: str) -> None:
        self._run(node, ["systemctl", "restart", "kubelet"])

    def _run(self, node: str, argv: list[str]) -> str:
        assert self.namespace is not None
        name = pod_name(node, argv)
        body = privileged_pod(name, self.namespace, node, self.image, argv, self.run_id)
        shown = f"{' '.join(argv)} in pod {self.namespace}/{name} on node {node}"
        try:
            self.k8s.core.create_namespaced_pod(self.namespace, body, field_manager=FIELD_MANAGER)
        except ApiException as exc:
            raise RuntimeError(
                f"a privileged pod on node {node} was refused: {exc.status} {exc.reason}: "
                f"{(exc.body or '')[:300]} (nodeCommands.privilegedPod.namespace must admit "
                "privileged pods)"
            ) from None
        try:
            pod = wait_until(
                lambda: state.read_pod(self.k8s, self.namespace, name),
                lambda p: state.pod_phase(p) in ("Succeeded", "Failed"),
                describe=f"{shown} to finish",
                timeout=self.timeout,
                show=state.pod_summary,
            )
            log = self.k8s.core.read_namespaced_pod_log(name, self.namespace, container=CONTAINER)
        finally:
            objects.delete(self.k8s, "Pod", name, self.namespace, grace_period_seconds=0)
        code = exit_code(pod)
        if state.pod_phase(pod) != "Succeeded":
            raise RuntimeError(f"{shown} exited {code}: {log[-2000:]}")
        return log
