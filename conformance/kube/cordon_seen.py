"""Wait until the scheduler has seen a node's cordon.

Cordoning writes spec.unschedulable at the API server; the scheduler learns of it through its node
informer a moment later (seconds on a loaded machine). A pod created in that moment can still be
placed on the node: a race of the harness, not a fault of the driver. A probe pod pinned to the
node, with no claims, that the scheduler reports unschedulable because the node is, proves that
its cache has the cordon, and every later scheduling cycle starts from that cache. A probe placed
on the node anyway (the cache was still stale) is deleted and another one created.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from conformance.kube import objects, state
from conformance.kube.client import K8sClients
from conformance.kube.waits import wait_until

# The NodeUnschedulable filter's reason, in the pod's PodScheduled=False message.
UNSCHEDULABLE_NODE = "node(s) were unschedulable"


def _scheduled(pod: dict[str, Any] | None) -> str | None:
    cond = state.pod_condition(pod, "PodScheduled") if pod else None
    return cond.get("status") if cond else None


def refused_for_cordon(pod: dict[str, Any] | None) -> bool:
    """The scheduler looked at the pod and found its node unschedulable."""
    cond = (state.pod_condition(pod, "PodScheduled") if pod else None) or {}
    return cond.get("status") == "False" and UNSCHEDULABLE_NODE in (cond.get("message") or "")


def await_cordon_seen(
    k8s: K8sClients,
    node: str,
    *,
    namespace: str,
    probe: Callable[[str], dict[str, Any]],
    timeout: float,
) -> int:
    """Return once a probe pod pinned to `node` is refused because the node is cordoned.

    `probe(name)` builds the probe pod in `namespace` (pinned to `node`, without claims). Returns
    how many probes the scheduler still placed on the node before it saw the cordon.
    """
    names = (f"cordon-probe-{i}" for i in itertools.count(1))
    current = {"name": next(names), "placed": 0}
    objects.create(k8s, probe(current["name"]))

    def read() -> dict[str, Any] | None:
        pod = state.read_pod(k8s, namespace, current["name"])
        if _scheduled(pod) == "True":  # placed from a stale cache: try again
            objects.delete(k8s, "Pod", current["name"], namespace, grace_period_seconds=0)
            current["placed"] += 1
            current["name"] = next(names)
            objects.create(k8s, probe(current["name"]))
        return pod

    try:
        wait_until(
            read,
            refused_for_cordon,
            describe=f"the scheduler to see node {node} cordoned (a probe pod pinned to it "
            f"refused with {UNSCHEDULABLE_NODE!r})",
            timeout=timeout,
            show=lambda pod: {
                "probe": f"{namespace}/{current['name']}",
                "probes placed before": current["placed"],
                "state": state.pod_summary(pod),
            },
        )
    finally:
        objects.delete(k8s, "Pod", current["name"], namespace, grace_period_seconds=0)
    return current["placed"]
