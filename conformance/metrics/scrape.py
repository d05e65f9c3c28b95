"""One snapshot of the DRA metrics: every node's kubelet (through the API server's node proxy)
and the control-plane components where the API server can reach them (their pods' proxy).

Each source is read or named "not available (why)": a forbidden proxy, a component listening on
its node's localhost only (kubeadm binds kube-scheduler and kube-controller-manager to
127.0.0.1; the kind clusters the suite creates do not), a managed control plane without those
pods. Where the component's own arguments stand in the way, the snapshot says which to set.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import urllib3
from kubernetes.client.exceptions import ApiException

from conformance.kube.client import K8sClients
from conformance.metrics.parse import MetricsParseError, ParsedMetrics, parse_metrics
from conformance.model.component_metrics import enable_hint
from conformance.model.metrics_text import only_families

GRPC = "dra_grpc_operations_duration_seconds"
OPERATIONS = "dra_operations_duration_seconds"
CLAIMS_IN_USE = "dra_resource_claims_in_use"
SCHEDULER_PLUGIN = "scheduler_plugin_execution_duration_seconds"
# Prefixes of the resource-claim controller's families: resourceclaim_controller_* up to 1.36,
# dynamic_resource_allocation_* (resourceclaim_creates_total, resource_claims) from 1.37 on.
CLAIM_CONTROLLER = ("resourceclaim_controller", "dynamic_resource_allocation")

PROCESS_START = "process_start_time_seconds"  # a restarted kubelet's counters start again

KUBELET_FAMILIES = (GRPC, OPERATIONS, CLAIMS_IN_USE, PROCESS_START)
KUBELET_TIMEOUT_S = 10.0
COMPONENT_TIMEOUT_S = 5.0
LIST_TIMEOUT_S = 10.0  # a run's end never hangs on an API server that stopped answering


@dataclass(frozen=True)
class Component:
    """A control-plane component found by its static pod's label (kubeadm, kind)."""

    name: str
    port: int
    families: tuple[str, ...]


SCHEDULER = Component("kube-scheduler", 10259, (SCHEDULER_PLUGIN,))
CONTROLLER_MANAGER = Component("kube-controller-manager", 10257, CLAIM_CONTROLLER)


@dataclass
class Snapshot:
    taken: float  # epoch seconds
    sources: dict[str, ParsedMetrics] = field(default_factory=dict)  # "kubelet <node>" ...
    unavailable: dict[str, str] = field(default_factory=dict)  # source -> why
    texts: dict[str, str] = field(default_factory=dict)  # source -> the families' lines read
    partial: bool = False  # some kubelets only (read around a restart), not every source
    # source -> what its operator can enable so that a run reads it (a component's arguments)
    remedies: dict[str, str] = field(default_factory=dict)


def kubelet_source(node: str) -> str:
    return f"kubelet {node}"


def take_snapshot(k8s: K8sClients, components: tuple[Component, ...] = (SCHEDULER,)) -> Snapshot:
    """Every node's kubelet and `components`; never raises for one source that fails."""
    snapshot = Snapshot(taken=time.time())
    try:
        nodes = sorted(
            n.metadata.name for n in k8s.core.list_node(_request_timeout=LIST_TIMEOUT_S).items
        )
    except (ApiException, urllib3.exceptions.HTTPError) as exc:
        snapshot.unavailable["kubelets"] = f"cannot list nodes: {why_unavailable(exc)}"
        nodes = []
    for node in nodes:
        _read_kubelet(snapshot, k8s, node)
    for component in components:
        _read_component(snapshot, k8s, component)
    return snapshot


def read_kubelets(k8s: K8sClients, nodes: list[str]) -> Snapshot:
    """The kubelets of `nodes` only: a read right before or after one is restarted."""
    snapshot = Snapshot(taken=time.time(), partial=True)
    for node in nodes:
        _read_kubelet(snapshot, k8s, node)
    return snapshot


def _read_kubelet(snapshot: Snapshot, k8s: K8sClients, node: str) -> None:
    path = f"/api/v1/nodes/{node}/proxy/metrics"
    _read(snapshot, kubelet_source(node), path, KUBELET_FAMILIES, k8s, KUBELET_TIMEOUT_S)


def _read_component(snapshot: Snapshot, k8s: K8sClients, component: Component) -> None:
    try:
        pods = k8s.core.list_namespaced_pod(
            "kube-system",
            label_selector=f"component={component.name}",
            _request_timeout=LIST_TIMEOUT_S,
        ).items
    except (ApiException, urllib3.exceptions.HTTPError) as exc:
        snapshot.unavailable[component.name] = f"cannot list its pods: {why_unavailable(exc)}"
        return
    if not pods:
        snapshot.unavailable[component.name] = (
            f"no pod labelled component={component.name} in kube-system (a managed control plane)"
        )
        return
    for pod in sorted(pods, key=lambda p: p.metadata.name):
        name = pod.metadata.name
        path = f"/api/v1/namespaces/kube-system/pods/https:{name}:{component.port}/proxy/metrics"
        source = component.name if len(pods) == 1 else f"{component.name} {name}"
        failure = _read(snapshot, source, path, component.families, k8s, COMPONENT_TIMEOUT_S)
        if failure is not None and arguments_would_help(failure):
            snapshot.remedies[source] = enable_hint()


def _read(
    snapshot: Snapshot,
    source: str,
    path: str,
    families: tuple[str, ...],
    k8s: K8sClients,
    timeout: float,
) -> Exception | None:
    """Read one source into `snapshot`; the failure, if any (said in snapshot.unavailable)."""
    try:
        text = only_families(k8s.get_raw(path, accept="text/plain", timeout=timeout), families)
        snapshot.sources[source] = parse_metrics(text)
        snapshot.texts[source] = text
    except (ApiException, urllib3.exceptions.HTTPError, MetricsParseError) as exc:
        snapshot.unavailable[source] = why_unavailable(exc)
        return exc
    return None


def arguments_would_help(exc: Exception) -> bool:
    """The component's own answer, which its arguments decide: its port refused (bound to
    localhost), or /metrics denied to the proxy's anonymous request. A 403 naming pods/proxy is
    the run's account (RBAC), not the component."""
    status = getattr(exc, "status", None)
    message = _status_message(getattr(exc, "body", None)) or str(getattr(exc, "reason", ""))
    if status == 403:
        return "pods/proxy" not in message
    return status == 401 or "connection refused" in message


def why_unavailable(exc: Exception) -> str:
    """One line: what the API server (or the component behind it) said."""
    if isinstance(exc, MetricsParseError):
        return str(exc)
    status = getattr(exc, "status", None)
    if status is None:
        return f"not reachable: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    message = _status_message(getattr(exc, "body", None)) or str(getattr(exc, "reason", ""))
    if status == 403:
        return f"forbidden (HTTP 403): {message}"[:300]
    hint = ""
    if "connection refused" in message:
        hint = " — it listens on its node's localhost only"
    elif status == 401 or "Unauthorized" in message:
        hint = " — it does not let the API server's proxy read /metrics"
    return f"HTTP {status}: {message}"[:300] + hint


def _status_message(body: object) -> str:
    if not body:
        return ""
    text = body.decode(errors="replace") if isinstance(body, bytes) else str(body)
    try:
        return str(json.loads(text).get("message") or "").splitlines()[0]
    except (ValueError, AttributeError, IndexError):
        return text.strip().splitlines()[0][:200] if text.strip() else ""
