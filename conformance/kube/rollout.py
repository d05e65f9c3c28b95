"""A DaemonSet's pod template changed and put back (with the field ownership the change took
given back), and its rolling update followed node by node: when each node's old pod stopped
serving and when its replacement became ready.

Rollout done is what `kubectl rollout status` checks, on the DaemonSetStatus fields of
k8s.io/api@v0.37.2 apps/v1: `status.observedGeneration` >= `metadata.generation`, and
`status.updatedNumberScheduled` and `status.numberReady` equal to
`status.desiredNumberScheduled` (conformance.kube.readiness.daemonset_state).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.kube.client import K8sClients
from conformance.kube.daemonsets import brief, daemonset_pods
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.kube.ownership import give_back
from conformance.kube.readiness import daemonset_state
from conformance.kube.state import pod_is_ready


def read_daemonset(k8s: K8sClients, namespace: str, name: str) -> dict[str, Any]:
    return k8s.to_dict(k8s.apps.read_namespaced_daemon_set(name, namespace))


def update_strategy(daemonset: Mapping[str, Any]) -> str:
    """`spec.updateStrategy.type`: RollingUpdate (the API's default) or OnDelete."""
    return ((daemonset.get("spec") or {}).get("updateStrategy") or {}).get(
        "type"
    ) or "RollingUpdate"


def changed_template(
    template: Mapping[str, Any],
    *,
    annotations: Mapping[str, str] | None = None,
    container: str | None = None,
    image: str | None = None,
    pull_policy: str | None = None,
) -> dict[str, Any]:
    """A copy of the pod template with `annotations` added and, for `container` (default:
    the first), `image` and `imagePullPolicy` set."""
    out = copy.deepcopy(dict(template))
    meta = out.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), **(annotations or {})}
    if image or pull_policy:
        containers = out["spec"]["containers"]
        target = (
            containers[0]
            if container is None
            else next((c for c in containers if c["name"] == container), None)
        )
        if target is None:
            names = [c["name"] for c in containers]
            raise ValueError(f"the pod template has no container {container!r} (it has {names})")
        if image:
            target["image"] = image
        if pull_policy:
            target["imagePullPolicy"] = pull_policy
    return out


def set_template(k8s: K8sClients, namespace: str, name: str, template: Mapping[str, Any]) -> int:
    """Replace `spec.template` (a JSON patch, so nothing of the old template is merged in);
    returns the DaemonSet's new `metadata.generation`."""
    patched = k8s.apps.patch_namespaced_daemon_set(
        name,
        namespace,
        [{"op": "replace", "path": "/spec/template", "value": dict(template)}],
        field_manager=FIELD_MANAGER,
        _content_type="application/json-patch+json",
    )
    return int(k8s.to_dict(patched)["metadata"]["generation"])


def managed_fields(daemonset: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list((daemonset.get("metadata") or {}).get("managedFields") or [])


def give_back_ownership(
    k8s: K8sClients, namespace: str, name: str, original: list[dict[str, Any]]
) -> bool:
    """After the original template is back: the fields the harness's patches took go back to
    the managers that owned them in `original` (the DaemonSet's managedFields before), so
    the vendor's tooling applies its next version without a conflict (kube/ownership.py)."""
    return give_back(
        lambda: read_daemonset(k8s, namespace, name),
        lambda patch: k8s.apps.patch_namespaced_daemon_set(
            name,
            namespace,
            patch,
            field_manager=FIELD_MANAGER,
            _content_type="application/json-patch+json",
        ),
        original,
    )


@dataclass
class NodeRollout:
    """One node's plugin pod being replaced (monotonic seconds; None: not seen yet)."""

    old_uid: str | None
    stopped_at: float | None = None  # the old pod first seen not serving (deleting, gone)
    ready_at: float | None = None  # a new pod first seen ready
    new_uid: str | None = None

    @property
    def in_transition(self) -> bool:
        return self.stopped_at is not None and self.ready_at is None

    @property
    def unavailable_s(self) -> float | None:
        """How long the node had no ready plugin pod (None while that lasts)."""
        if self.ready_at is None:
            return None
        return max(0.0, self.ready_at - (self.stopped_at or self.ready_at))


@dataclass
class RolloutWatch:
    """Follows a DaemonSet's update; `observe()` once per poll."""

    k8s: K8sClients
    namespace: str
    name: str
    generation: int
    nodes: dict[str, NodeRollout]
    started: float = field(default_factory=time.monotonic)
    state: str = "not observed yet"
    pods: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def before(cls, k8s: K8sClients, namespace: str, name: str) -> RolloutWatch:
        """Call before changing the template: remembers each node's current pod."""
        nodes = {}
        for pod in daemonset_pods(k8s, namespace, name):
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                nodes[node] = NodeRollout(pod["metadata"]["uid"])
        return cls(k8s, namespace, name, 0, nodes)

    def start(self, generation: int) -> None:
        self.generation = generation
        self.started = time.monotonic()

    @property
    def done(self) -> bool:
        return self.state == "ready"

    def observe(self) -> RolloutWatch:
        # The DaemonSet first, then its pods: once its status says done, the pods read after
        # it show every node's new pod ready. Its status.observedGeneration is checked against
        # metadata.generation, which our change raised, so no status from before it reads done.
        self.state = daemonset_state(self.k8s, self.namespace, self.name)
        now = time.monotonic()
        self.pods = daemonset_pods(self.k8s, self.namespace, self.name)
        by_node: dict[str, list[dict[str, Any]]] = {}
        for pod in self.pods:
            by_node.setdefault((pod.get("spec") or {}).get("nodeName") or "", []).append(pod)
        for node, seen in self.nodes.items():
            pods = by_node.get(node, [])
            old = next((p for p in pods if p["metadata"]["uid"] == seen.old_uid), None)
            new = next(
                (p for p in pods if p["metadata"]["uid"] != seen.old_uid and pod_is_ready(p)), None
            )
            if seen.stopped_at is None and (new is not None or not pod_is_ready(old)):
                seen.stopped_at = now
            if seen.ready_at is None and new is not None:
                seen.ready_at, seen.new_uid = now, new["metadata"]["uid"]
        return self

    def summary(self) -> dict[str, Any]:
        """What a timeout reports: the DaemonSet's state and each node's pods."""
        return {
            "daemonset": f"{self.namespace}/{self.name}: {self.state}",
            "generation of the change": self.generation,
            "nodes": {
                node: {
                    "old pod": seen.old_uid,
                    "old pod stopped": seen.stopped_at is not None,
                    "new pod ready": seen.new_uid,
                }
                for node, seen in sorted(self.nodes.items())
            },
            "pods": brief(self.pods),
        }
