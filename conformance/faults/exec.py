"""The `exec` method: the same argv templates, run inside the driver's kubelet-plugin pod on the
fault's node (the pod of the profile's readiness.daemonSet there), through the API server's
exec stream.

The exec API has no environment, so the values reach the command only as {placeholders}
(wrap the command in `sh -c` to set variables from them).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import yaml
from kubernetes import client as k8s_client
from kubernetes.stream import stream
from kubernetes.stream.ws_client import ERROR_CHANNEL

from conformance.faults.command import TemplateInjector
from conformance.faults.interface import FaultCommandError, FaultContext
from conformance.kube.client import clients_for
from conformance.kube.daemonsets import daemonset_pods_on_node
from conformance.model.fault_config import FaultSpec

NOT_STARTED = 126  # the exit code reported when the command could not be started (sh's)


class ExecInjector(TemplateInjector):
    """Fault commands run in the kubelet-plugin pod (`faults.<kind>.method: exec`)."""

    def __init__(self, spec: FaultSpec, context: FaultContext) -> None:
        if not (context.driver_namespace and context.driver_daemonset):
            raise FaultCommandError(
                spec.kind.value,
                spec.command,
                "cannot run: method exec needs the profile's readiness.daemonSet "
                "{namespace, name} to find the driver's pod",
            )
        self._pending_node: str | None = None
        super().__init__(spec, context, self._run_in_pod)

    def _invoke(self, phase: str, argv: tuple[str, ...], values: Mapping[str, str]) -> None:
        self._pending_node = values.get("node") or None
        super()._invoke(phase, argv, values)

    def _run_in_pod(
        self, kind: str, argv: list[str], env: Mapping[str, str], timeout: float
    ) -> None:
        node = self._pending_node
        if not node:
            raise FaultCommandError(kind, argv, "cannot run: the fault names no node")
        namespace = str(self.context.driver_namespace)
        name = str(self.context.driver_daemonset)
        k8s = clients_for(self.context.api_client)
        pods = [
            p
            for p in daemonset_pods_on_node(k8s, namespace, name, node)
            if not p["metadata"].get("deletionTimestamp")
        ]
        if not pods:
            raise FaultCommandError(
                kind, argv, f"cannot run: DaemonSet {namespace}/{name} has no pod on node {node}"
            )
        pod = pods[0]["metadata"]["name"]
        container = self.spec.container or pods[0]["spec"]["containers"][0]["name"]
        code, output = _exec(self.context.api_client, namespace, pod, container, argv, timeout)
        where = f"in pod {namespace}/{pod} container {container}"
        if code is None:
            raise FaultCommandError(kind, argv, f"timed out after {timeout:g}s {where}")
        if code != 0:
            last = [ln.strip() for ln in output.splitlines() if ln.strip()]
            tail = f": {last[-1][:300]}" if last else ""
            raise FaultCommandError(kind, argv, f"failed with exit code {code} {where}{tail}")


def _exec(
    api_client: Any, namespace: str, pod: str, container: str, argv: list[str], timeout: float
) -> tuple[int | None, str]:
    """(exit code or None on timeout, stdout+stderr). A private ApiClient: `stream` swaps the
    client's request function while it runs, which must not race with other calls."""
    api = k8s_client.CoreV1Api(k8s_client.ApiClient(api_client.configuration))
    resp = stream(
        api.connect_get_namespaced_pod_exec,
        pod,
        namespace,
        command=argv,
        container=container,
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
        _preload_content=False,
    )
    output: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while resp.is_open() and time.monotonic() < deadline:
            resp.update(timeout=min(1.0, max(0.0, deadline - time.monotonic())))
            output.append(resp.read_stdout())
            output.append(resp.read_stderr())
        if resp.is_open():
            return None, "".join(output)
        status = yaml.safe_load(resp.read_channel(ERROR_CHANNEL) or "{}") or {}
    finally:
        resp.close()
    code = _exit_code(status)
    # Not started at all: the reason is in the Status message, not in the output.
    why = str(status.get("message") or "") if code == NOT_STARTED else ""
    return code, "".join(output) + why


def _exit_code(status: dict[str, Any]) -> int:
    """The exit code from the exec error channel's Status (v4.channel.k8s.io)."""
    if status.get("status", "Success") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or ():
        if cause.get("reason") == "ExitCode":
            return int(cause.get("message") or 1)
    return NOT_STARTED
