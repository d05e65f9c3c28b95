"""What a node's kubelet says about DRA, read through the API server's node proxy (needs
`nodes/proxy` get, which the harness's cluster-admin kubeconfig has)."""

from __future__ import annotations

from conformance.kube.client import K8sClients


def kubelet_metrics(k8s: K8sClients, node: str) -> str:
    """The kubelet's metrics page as Prometheus text (parsed by conformance.metrics)."""
    return k8s.get_raw(f"/api/v1/nodes/{node}/proxy/metrics", accept="text/plain")
