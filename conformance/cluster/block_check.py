"""The profile's cluster block checked on a cluster the suite did not create, before any test:
feature gates from the API server's and each selected node's kubelet `kubernetes_feature_enabled`
metric (the kubelet's through the node proxy, as conformance.metrics.scrape reads it), kubelet
fields from the node proxy's /configz, labels from the Node objects
(conformance.model.cluster_block_check compares them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import urllib3
from kubernetes.client.exceptions import ApiException

from conformance.errors import ClusterError, ConformanceError
from conformance.kube.client import K8sClients
from conformance.model.cluster_block import ClusterRequirements
from conformance.model.cluster_block_check import (
    CONFIG_DUMP,
    Finding,
    gate_findings,
    kubelet_findings,
    label_findings,
    missing_line,
    mount_findings,
    mount_script,
    node_settings,
    runtime_findings,
    unchecked_findings,
)
from conformance.model.feature_gates import gates_from_metrics

TIMEOUT_S = 10.0
REMEDY = (
    "give the cluster what the profile's cluster block asks for (docs/profile.md, cluster), "
    "or let the suite make a kind cluster with it (--cluster kind)"
)


def _why(exc: Exception) -> str:
    status = getattr(exc, "status", None)
    return f"HTTP {status} {getattr(exc, 'reason', '')}".strip() if status else str(exc)


def _gates(k8s: K8sClients, path: str) -> tuple[dict[str, bool] | None, str]:
    try:
        gates = gates_from_metrics(k8s.get_raw(path, accept="text/plain", timeout=TIMEOUT_S))
    except (ApiException, urllib3.exceptions.HTTPError) as exc:
        return None, f"GET {path} failed ({_why(exc)})"
    if not gates:
        return None, f"{path} has no kubernetes_feature_enabled series"
    return gates, ""


def _configz(k8s: K8sClients, node: str) -> tuple[dict | None, str]:
    path = f"/api/v1/nodes/{node}/proxy/configz"
    try:
        config = json.loads(k8s.get_raw(path, timeout=TIMEOUT_S)).get("kubeletconfig")
    except (ApiException, urllib3.exceptions.HTTPError, ValueError) as exc:
        return None, f"GET {path} failed ({_why(exc)})"
    if not isinstance(config, dict):
        return None, f"{path} has no kubeletconfig"
    return config, ""


# Runs an argv on a node (in its host namespaces) and returns its output; raises RuntimeError
# or a ConformanceError when it cannot (conformance.node_access's `run`).
RunOnNode = Callable[[str, Sequence[str]], str]


def _on_node(run: RunOnNode, node: str, block: ClusterRequirements) -> list[Finding]:
    """containerd's settings and the mounts, read on the node."""
    found: list[Finding] = []
    try:
        if block.containerd.nri is not None or block.containerd.cdi_spec_dirs:
            found += runtime_findings(node, run(node, CONFIG_DUMP), block)
        if block.extra_mounts:
            found += mount_findings(node, run(node, ["sh", "-c", mount_script(block)]))
    except (RuntimeError, ConformanceError) as exc:
        detail = f"not checkable here (running on it failed: {str(exc).splitlines()[0]})"
        reachable = node_settings(block, reachable=True)
        return [
            Finding(f"node {node}", setting, detail, "unchecked")
            for setting in node_settings(block)
            if setting not in reachable
        ]
    return found


def findings(
    k8s: K8sClients,
    block: ClusterRequirements,
    node_selector: str,
    run_on_node: RunOnNode | None = None,
) -> list[Finding]:
    """Everything the block asks for that the cluster lacks, or that cannot be read here, on
    the nodes the profile selects; containerd's settings and the mounts only with
    `run_on_node`."""
    if block.empty:
        return []
    found: list[Finding] = []
    if block.feature_gates:
        gates, why = _gates(k8s, "/metrics")
        found += gate_findings("the API server", gates, block, why)
    nodes = k8s.core.list_node(label_selector=node_selector, _request_timeout=TIMEOUT_S).items
    for node in sorted(nodes, key=lambda n: n.metadata.name):
        name = node.metadata.name
        found += label_findings(name, node.metadata.labels or {}, block)
        if block.feature_gates:
            gates, why = _gates(k8s, f"/api/v1/nodes/{name}/proxy/metrics")
            found += gate_findings(f"node {name} (kubelet)", gates, block, why)
        if block.kubelet:
            config, why = _configz(k8s, name)
            found += kubelet_findings(name, config, block, why)
        if run_on_node is not None:
            found += _on_node(run_on_node, name, block)
    return found + unchecked_findings(block, reachable=run_on_node is not None)


def require(
    k8s: K8sClients,
    block: ClusterRequirements,
    node_selector: str,
    run_on_node: RunOnNode | None = None,
) -> list[str]:
    """Raise ClusterError (one line) when the cluster lacks what the block asks for; else the
    warning lines of what could not be checked."""
    try:
        found = findings(k8s, block, node_selector, run_on_node)
    except (ApiException, urllib3.exceptions.HTTPError) as exc:
        raise ClusterError(
            f"could not check the profile's cluster block: listing nodes failed ({_why(exc)})",
            "run with an account that may list nodes and get nodes/proxy and /metrics",
        ) from None
    line = missing_line(found)
    if line is not None:
        raise ClusterError(line, REMEDY)
    return [f"warning: {f.line()}" for f in found if f.severity == "unchecked"]
