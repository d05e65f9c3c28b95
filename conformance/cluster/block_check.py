"""The profile's cluster block checked on a cluster the suite did not create, before any test:
feature gates from the API server's and each selected node's kubelet `kubernetes_feature_enabled`
metric (the kubelet's through the node proxy, as conformance.metrics.scrape reads it), kubelet
fields from the node proxy's /configz, labels from the Node objects
(conformance.model.cluster_block_check compares them).
"""

from __future__ import annotations

import json

import urllib3
from kubernetes.client.exceptions import ApiException

from conformance.errors import ClusterError
from conformance.kube.client import K8sClients
from conformance.model.cluster_block import ClusterRequirements
from conformance.model.cluster_block_check import (
    Finding,
    gate_findings,
    kubelet_findings,
    label_findings,
    missing_line,
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


def findings(k8s: K8sClients, block: ClusterRequirements, node_selector: str) -> list[Finding]:
    """Everything the block asks for that the cluster lacks, or that cannot be read here, on
    the nodes the profile selects."""
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
    return found + unchecked_findings(block)


def require(k8s: K8sClients, block: ClusterRequirements, node_selector: str) -> list[str]:
    """Raise ClusterError (one line) when the cluster lacks what the block asks for; else the
    warning lines of what could not be checked."""
    try:
        found = findings(k8s, block, node_selector)
    except (ApiException, urllib3.exceptions.HTTPError) as exc:
        raise ClusterError(
            f"could not check the profile's cluster block: listing nodes failed ({_why(exc)})",
            "run with an account that may list nodes and get nodes/proxy and /metrics",
        ) from None
    line = missing_line(found)
    if line is not None:
        raise ClusterError(line, REMEDY)
    return [f"warning: {f.line()}" for f in found if f.severity == "unchecked"]
