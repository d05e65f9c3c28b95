"""The pod a DaemonSet runs on one node (a driver's kubelet plugin): find it, restart it, and
wait until its replacement is ready."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from conformance.kube import state
from conformance.kube.client import K8sClients
from conformance.kube.readiness import readiness_state
from conformance.kube.waits import wait_until


def _selector(match_labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(match_labels.items()))


def daemonset_pods(
    k8s: K8sClients, namespace: str, name: str, node: str | None = None
) -> list[dict[str, Any]]:
    """Pods the DaemonSet controls (on `node` only, if given), terminating ones included."""
    ds = k8s.to_dict(k8s.apps.read_namespaced_daemon_set(name, namespace))
    labels = ((ds.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    listing = k8s.core.list_namespaced_pod(
        namespace,
        label_selector=_selector(labels),
        **({"field_selector": f"spec.nodeName={node}"} if node else {}),
    )
    uid = ds["metadata"]["uid"]
    return [
        p
        for p in (k8s.to_dict(i) for i in listing.items)
        if any(
            o.get("uid") == uid and o.get("controller")
            for o in p["metadata"].get("ownerReferences") or ()
        )
    ]


def daemonset_pods_on_node(
    k8s: K8sClients, namespace: str, name: str, node: str
) -> list[dict[str, Any]]:
    """Pods the DaemonSet controls on `node`, terminating ones included."""
    return daemonset_pods(k8s, namespace, name, node)


def brief(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "name": p["metadata"]["name"],
            "uid": p["metadata"]["uid"],
            "deletionTimestamp": p["metadata"].get("deletionTimestamp"),
            **state.pod_summary(p),
        }
        for p in pods
    ]


def wait_ready_pod_on_node(
    k8s: K8sClients,
    namespace: str,
    name: str,
    node: str,
    *,
    timeout: float,
    not_uid: str | None = None,
) -> dict[str, Any]:
    """The DaemonSet's ready pod on `node` (one whose UID is not `not_uid`, if given)."""

    def ready_one(pods: list[dict[str, Any]]) -> dict[str, Any] | None:
        return next(
            (p for p in pods if state.pod_is_ready(p) and p["metadata"]["uid"] != not_uid),
            None,
        )

    pods = wait_until(
        lambda: daemonset_pods_on_node(k8s, namespace, name, node),
        lambda ps: ready_one(ps) is not None,
        describe=f"a ready pod of DaemonSet {namespace}/{name} on node {node}"
        + (f" other than the one with UID {not_uid}" if not_uid else ""),
        timeout=timeout,
        show=brief,
    )
    return ready_one(pods)  # type: ignore[return-value]


def restart_pod_on_node(
    k8s: K8sClients, namespace: str, name: str, node: str, *, timeout: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Delete the DaemonSet's pod on `node` (default grace period) and wait for the ready
    replacement; returns (old pod, new pod)."""
    old = wait_ready_pod_on_node(k8s, namespace, name, node, timeout=timeout)
    k8s.core.delete_namespaced_pod(old["metadata"]["name"], namespace)
    new = wait_ready_pod_on_node(
        k8s, namespace, name, node, timeout=timeout, not_uid=old["metadata"]["uid"]
    )
    return old, new


def wait_driver_ready(
    k8s: K8sClients, profile: Any, *, timeout: float, nodes: Collection[str] | None = None
) -> None:
    """The profile's readiness: DaemonSet rolled out and ready, every node with its slices;
    with `nodes`, on those nodes only (a ready plugin pod and the slices of each)."""
    where = f" on {', '.join(sorted(nodes))}" if nodes is not None else ""
    wait_until(
        lambda: readiness_state(k8s, profile, nodes),
        lambda s: s.ready,
        describe=f"driver {profile.driver} to be ready{where} (profile readiness)",
        timeout=timeout,
        show=str,
        interval=2.0,
    )
