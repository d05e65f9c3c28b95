"""Is a driver ready the way its profile says: its kubelet-plugin DaemonSet rolled out and
ready, and every selected node with enough ResourceSlices. When not, what the cluster said
about it (API rejections in the plugin's logs, Warning events of its namespace)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from conformance.kube.client import K8sClients
from conformance.kube.state import pod_is_ready
from conformance.model.profile import Profile
from conformance.model.readiness_failure import (
    LOG_TAIL_LINES,
    pick_cluster_said,
    rejection_lines,
    warning_event_lines,
)


@dataclass(frozen=True)
class ReadinessState:
    """What was last seen while waiting for the driver: reported on timeout."""

    daemonset: str
    slices_per_node: dict[str, int]
    missing_nodes: tuple[str, ...]

    @property
    def ready(self) -> bool:
        return self.daemonset == "ready" and not self.missing_nodes

    def __str__(self) -> str:
        nodes = ", ".join(f"{n}={c}" for n, c in sorted(self.slices_per_node.items()))
        text = f"daemonset: {self.daemonset}; slices per node: {nodes or 'none'}"
        if self.missing_nodes:
            text += f"; nodes without enough slices: {', '.join(self.missing_nodes)}"
        return text


def daemonset_state(k8s: K8sClients, namespace: str, name: str) -> str:
    """'ready', or a short description of why not."""
    try:
        ds = k8s.to_dict(k8s.apps.read_namespaced_daemon_set(name, namespace))
    except ApiException as exc:
        if exc.status == 404:
            return f"DaemonSet {namespace}/{name} not found"
        raise
    status = ds.get("status") or {}
    desired = status.get("desiredNumberScheduled", 0)
    ready = status.get("numberReady", 0)
    updated = status.get("updatedNumberScheduled", 0)
    generation = ds["metadata"].get("generation", 0)
    observed = status.get("observedGeneration", 0)
    if observed < generation:
        return f"rollout not observed yet (generation {generation}, observed {observed})"
    if desired == 0:
        return "no pods scheduled (desiredNumberScheduled=0)"
    if ready < desired or updated < desired:
        return f"{ready}/{desired} ready, {updated}/{desired} updated"
    return "ready"


def selected_nodes(k8s: K8sClients, profile: Profile) -> list[str]:
    nodes = k8s.core.list_node(label_selector=profile.node_selector).items
    return sorted(k8s.to_dict(n)["metadata"]["name"] for n in nodes)


def slices_per_node(k8s: K8sClients, driver: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    listing = k8s.resource.list_resource_slice(field_selector=f"spec.driver={driver}")
    for item in listing.items:
        node = (k8s.to_dict(item).get("spec") or {}).get("nodeName")
        if node:
            counts[node] = counts.get(node, 0) + 1
    return counts


def readiness_state(
    k8s: K8sClients, profile: Profile, nodes: Collection[str] | None = None
) -> ReadinessState:
    """The driver's readiness on every selected node, or on `nodes` only: there, the plugin
    pod of each ready rather than the whole DaemonSet rolled out, so a test that disrupted
    one node does not wait for another test's disruption of another node."""
    ds = "ready"
    if profile.readiness.daemonset_name and profile.readiness.daemonset_namespace:
        if nodes is None:
            ds = daemonset_state(
                k8s, profile.readiness.daemonset_namespace, profile.readiness.daemonset_name
            )
        else:
            ds = plugin_pods_state(k8s, profile, nodes)
    counts = slices_per_node(k8s, profile.driver)
    wanted = profile.readiness.slices_per_node
    among = sorted(nodes) if nodes is not None else selected_nodes(k8s, profile)
    missing = tuple(n for n in among if counts.get(n, 0) < wanted)
    return ReadinessState(ds, counts, missing)


def plugin_pods_state(k8s: K8sClients, profile: Profile, nodes: Collection[str]) -> str:
    """'ready' when each of `nodes` runs a ready plugin pod of the profile's DaemonSet, or
    which nodes do not."""
    ready_on = {
        (pod.get("spec") or {}).get("nodeName")
        for pod in driver_pods(k8s, profile)
        if pod_is_ready(pod)
    }
    without = sorted(set(nodes) - ready_on)
    return "ready" if not without else f"no ready plugin pod on {', '.join(without)}"


def readiness_problems(state: ReadinessState) -> dict[str, str]:
    """Readiness part -> what was wrong with it (empty when ready)."""
    problems: dict[str, str] = {}
    if state.daemonset != "ready":
        problems["plugin"] = f"kubelet-plugin DaemonSet: {state.daemonset}"
    if state.missing_nodes:
        problems["slices"] = "no ResourceSlices (or too few) on " + ", ".join(state.missing_nodes)
    return problems


def driver_pods(k8s: K8sClients, profile: Profile) -> list[dict[str, Any]]:
    """The pods of the profile's readiness DaemonSet (none when the profile names none)."""
    namespace, name = profile.readiness.daemonset_namespace, profile.readiness.daemonset_name
    if not (namespace and name):
        return []
    try:
        ds = k8s.to_dict(k8s.apps.read_namespaced_daemon_set(name, namespace))
    except ApiException:
        return []
    labels = ((ds.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if not labels:
        return []
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    pods = k8s.core.list_namespaced_pod(namespace, label_selector=selector).items
    return [k8s.to_dict(p) for p in pods]


def what_the_cluster_said(k8s: K8sClients, profile: Profile, since: float) -> tuple[str, ...]:
    """API rejections in the tail of the driver pods' logs, then the Warning events of the
    driver's namespace since `since` (epoch seconds): a line or two, redacted. Best effort:
    what cannot be read is left out (the readiness state is reported either way)."""
    rejections: list[str] = []
    warnings: list[str] = []
    namespace = profile.readiness.daemonset_namespace
    try:
        for pod in driver_pods(k8s, profile):
            name = pod["metadata"]["name"]
            for container in (pod.get("spec") or {}).get("containers") or ():
                try:
                    text = k8s.core.read_namespaced_pod_log(
                        name, namespace, container=container["name"], tail_lines=LOG_TAIL_LINES
                    )
                except ApiException:
                    continue  # not started yet, or gone
                rejections += rejection_lines(text or "")
        if namespace:
            events = [k8s.to_dict(e) for e in k8s.core.list_namespaced_event(namespace).items]
            warnings = warning_event_lines(events, since=datetime.fromtimestamp(since, UTC))
    except ApiException:
        pass
    return pick_cluster_said(rejections, warnings)
