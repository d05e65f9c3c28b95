"""Delete a Node object and bring the node back.

A kubelet registers its Node only when it starts, so a deleted Node comes back when the
kubelet is restarted (by the caller's node access: conformance.node_access). What the kubelet
does not set itself - labels and annotations others added, taints that are not the node
controller's - is put back from a snapshot. The re-created Node has a new UID (and may get
another pod CIDR), so the node's DaemonSet pods that are not on the host network are
restarted: a driver's kubelet plugin must publish its slices again with the new Node as their
owner.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from conformance.kube import state
from conformance.kube.client import K8sClients
from conformance.kube.drain import is_daemonset_pod
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.kube.waits import wait_until

CONTROLLER_TAINT_PREFIX = "node.kubernetes.io/"
DELETED_NODES_DIR = "deleted-nodes"  # under the run's harness directory


@dataclass(frozen=True)
class NodeSnapshot:
    name: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    taints: tuple[dict[str, Any], ...]
    unschedulable: bool

    @classmethod
    def read(cls, k8s: K8sClients, name: str) -> NodeSnapshot:
        node = k8s.to_dict(k8s.core.read_node(name))
        meta, spec = node["metadata"], node.get("spec") or {}
        return cls(
            name,
            meta["uid"],
            dict(meta.get("labels") or {}),
            dict(meta.get("annotations") or {}),
            tuple(
                {k: t[k] for k in ("key", "value", "effect") if t.get(k) is not None}
                for t in spec.get("taints") or ()
                if not t["key"].startswith(CONTROLLER_TAINT_PREFIX)
            ),
            bool(spec.get("unschedulable")),
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> NodeSnapshot:
        data = json.loads(text)
        return cls(**{**data, "taints": tuple(data["taints"])})


def read_node(k8s: K8sClients, name: str) -> dict[str, Any] | None:
    return state.read_or_none(k8s, k8s.core.read_node, name)


def is_ready(node: dict[str, Any] | None) -> bool:
    for cond in (node or {}).get("status", {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def wait_registered(k8s: K8sClients, snapshot: NodeSnapshot, *, timeout: float) -> dict:
    """The Node is back (a new object) and Ready."""
    return wait_until(
        lambda: read_node(k8s, snapshot.name),
        lambda n: n is not None and n["metadata"]["uid"] != snapshot.uid and is_ready(n),
        describe=f"node {snapshot.name} to register again (new Node object) and be Ready",
        timeout=timeout,
        interval=2.0,
        show=lambda n: (
            "not found"
            if n is None
            else {"uid": n["metadata"]["uid"], "conditions": n.get("status", {}).get("conditions")}
        ),
    )


def restore_metadata(k8s: K8sClients, snapshot: NodeSnapshot) -> None:
    """Put back labels, annotations and taints the kubelet does not set, and the cordon."""
    node = k8s.to_dict(k8s.core.read_node(snapshot.name))
    meta, spec = node["metadata"], node.get("spec") or {}
    labels = {k: v for k, v in snapshot.labels.items() if k not in (meta.get("labels") or {})}
    annotations = {
        k: v for k, v in snapshot.annotations.items() if k not in (meta.get("annotations") or {})
    }
    present = {(t["key"], t["effect"]) for t in spec.get("taints") or ()}
    missing = [t for t in snapshot.taints if (t["key"], t["effect"]) not in present]
    patch: dict[str, Any] = {}
    if labels or annotations:
        patch["metadata"] = {"labels": labels, "annotations": annotations}
    if missing:
        patch.setdefault("spec", {})["taints"] = [*(spec.get("taints") or ()), *missing]
    if snapshot.unschedulable and not spec.get("unschedulable"):
        patch.setdefault("spec", {})["unschedulable"] = True
    if patch:
        k8s.core.patch_node(snapshot.name, patch, field_manager=FIELD_MANAGER)


def restart_pod_network_daemon_pods(k8s: K8sClients, node: str) -> list[str]:
    """Delete the node's DaemonSet pods that use the pod network (their controllers recreate
    them with addresses of the new Node's pod CIDR and with its new UID at hand)."""
    listing = k8s.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}")
    deleted = []
    for pod in (k8s.to_dict(p) for p in listing.items):
        if not is_daemonset_pod(pod) or (pod.get("spec") or {}).get("hostNetwork"):
            continue
        meta = pod["metadata"]
        try:
            k8s.core.delete_namespaced_pod(meta["name"], meta["namespace"])
        except ApiException as exc:
            if exc.status != 404:
                raise
        deleted.append(f"{meta['namespace']}/{meta['name']}")
    return deleted


RestartKubelet = Callable[[str], None]  # node name -> its kubelet restarted


def restore_node(
    k8s: K8sClients, snapshot: NodeSnapshot, restart_kubelet: RestartKubelet, *, timeout: float
) -> None:
    """Bring a deleted node back: kubelet restart (if the Node is still missing), wait until
    it is registered and Ready, put back its metadata, restart its pod-network DaemonSet pods."""
    if read_node(k8s, snapshot.name) is None:
        restart_kubelet(snapshot.name)
    wait_registered(k8s, snapshot, timeout=timeout)
    restore_metadata(k8s, snapshot)
    restart_pod_network_daemon_pods(k8s, snapshot.name)


class DeletedNodeRegistry:
    """One file per Node a test deleted and has not yet brought back, so the end-of-run sweep
    can restore a node whose test was killed before its teardown."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def add(self, snapshot: NodeSnapshot) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        record = {"snapshot": json.loads(snapshot.to_json())}
        (self.directory / f"{snapshot.name}.json").write_text(json.dumps(record))

    def remove(self, node: str) -> None:
        (self.directory / f"{node}.json").unlink(missing_ok=True)

    def entries(self) -> list[NodeSnapshot]:
        out = []
        for path in sorted(self.directory.glob("*.json")) if self.directory.is_dir() else ():
            record = json.loads(path.read_text())
            out.append(NodeSnapshot.from_json(json.dumps(record["snapshot"])))
        return out


def restore_recorded_nodes(
    k8s: K8sClients,
    registry: DeletedNodeRegistry,
    restart_kubelet: RestartKubelet,
    *,
    timeout: float,
) -> list[str]:
    """Restore every node in the registry (the sweep's part); returns their names."""
    restored = []
    for snapshot in registry.entries():
        restore_node(k8s, snapshot, restart_kubelet, timeout=timeout)
        registry.remove(snapshot.name)
        restored.append(snapshot.name)
    return restored
