"""Test namespaces and the end-of-run sweep: a run leaves nothing behind, even when a test
is interrupted (Ctrl-C, SIGTERM) or an xdist worker is killed mid-test.

Three layers: the `test_namespace` fixture deletes its namespace and waits; a registry on disk
(one file per live namespace) lets an interrupted process delete its own; and the controller
sweeps everything labelled with the run id at session finish - namespaces, cluster-scoped
objects, and nodes a test cordoned.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from conformance.kube import objects, state
from conformance.kube.builders import Builders
from conformance.kube.client import K8sClients
from conformance.kube.drain import CORDONED_BY_PID_ANNOTATION
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.kube.waits import WaitTimeout, wait_for_deleted, wait_until
from conformance.model.naming import CORDONED_BY_LABEL, RUN_LABEL

log = logging.getLogger("conformance.cleanup")

CLUSTER_SCOPED_KINDS: tuple[tuple[str, str], ...] = (
    ("DeviceTaintRule", "resource.k8s.io/v1"),
    ("DeviceTaintRule", "resource.k8s.io/v1beta2"),
    ("DeviceTaintRule", "resource.k8s.io/v1alpha3"),
    ("DeviceClass", "resource.k8s.io/v1"),
    ("PriorityClass", "scheduling.k8s.io/v1"),
)


class NamespaceRegistry:
    """One JSON file per namespace a process created and has not yet seen deleted."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def add(self, namespace: str, nodeid: str) -> None:
        record = {
            "namespace": namespace,
            "nodeid": nodeid,
            "pid": os.getpid(),
            "created": time.time(),
        }
        (self.directory / f"{namespace}.json").write_text(json.dumps(record))

    def remove(self, namespace: str) -> None:
        (self.directory / f"{namespace}.json").unlink(missing_ok=True)

    def entries(self, *, pid: int | None = None) -> list[dict[str, Any]]:
        out = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if pid is None or record.get("pid") == pid:
                out.append(record)
        return out


def create_test_namespace(
    k8s: K8sClients, builders: Builders, registry: NamespaceRegistry, name: str, nodeid: str
) -> dict[str, Any]:
    # Registered before creation: a crash right after create must still be findable.
    registry.add(name, nodeid)
    try:
        return objects.create(k8s, builders.namespace(name))
    except BaseException:
        registry.remove(name)
        raise


def delete_namespace(
    k8s: K8sClients, registry: NamespaceRegistry | None, name: str, *, timeout: float
) -> str | None:
    """Delete and wait; None when gone, else what was left (for a warning, not a failure)."""
    objects.delete(k8s, "Namespace", name)
    try:
        wait_for_deleted(
            lambda: state.read_namespace(k8s, name), describe=f"namespace {name}", timeout=timeout
        )
    except WaitTimeout as exc:
        return str(exc)
    if registry is not None:
        registry.remove(name)
    return None


def namespace_holdings(k8s: K8sClients, name: str) -> list[str]:
    """What in the namespace may still hold a device: its pods and its ResourceClaims."""
    pods = [f"pod/{p.metadata.name}" for p in k8s.core.list_namespaced_pod(name).items]
    claims = [
        f"resourceclaim/{c.metadata.name}"
        for c in k8s.resource.list_namespaced_resource_claim(name).items
    ]
    return pods + claims


def release_namespace(k8s: K8sClients, name: str, *, timeout: float) -> str | None:
    """Delete the namespace and wait only until nothing in it can hold a device: no pod (the
    kubelet deletes a pod's object only after it unprepared the pod's claims) and no
    ResourceClaim (the claim controller deallocates before it drops a claim's finalizer).
    The namespace itself finishes deleting in the background; it stays in the registry so
    the end-of-run sweep waits for it. None when released, else what was left."""
    # Pods and claims first, directly: the namespace controller would get to them only after
    # walking every resource type of the cluster (seconds on a kind cluster). The controllers
    # that make pods go before them, or they would replace the deleted pods with new ones that
    # prepare devices again (a drain test's Deployment held its lease 4 s longer).
    for delete in (
        k8s.apps.delete_collection_namespaced_deployment,
        k8s.apps.delete_collection_namespaced_replica_set,
        k8s.apps.delete_collection_namespaced_stateful_set,
        k8s.core.delete_collection_namespaced_pod,
        k8s.resource.delete_collection_namespaced_resource_claim,
    ):
        try:
            delete(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
    objects.delete(k8s, "Namespace", name)
    try:
        wait_until(
            lambda: namespace_holdings(k8s, name),
            lambda left: not left,
            describe=f"the pods and claims of namespace {name} to be gone",
            timeout=timeout,
        )
    except WaitTimeout as exc:
        return str(exc)
    return None


# run id -> (faults undone, errors): the profile's injectors' sweep (conformance.faults)
FaultSweeper = Callable[[str], tuple[list[str], list[str]]]


@dataclass
class SweepResult:
    namespaces: list[str] = field(default_factory=list)
    cluster_objects: list[str] = field(default_factory=list)
    uncordoned: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many of each kind were removed (the kinds with none left out)."""
        counts: dict[str, int] = {}
        if self.namespaces:
            counts["Namespace"] = len(self.namespaces)
        for name in self.cluster_objects:
            kind = name.split("/", 1)[0]
            counts[kind] = counts.get(kind, 0) + 1
        if self.uncordoned:
            counts["cordon"] = len(self.uncordoned)
        if self.faults:
            counts["fault"] = len(self.faults)
        return counts

    def summary(self) -> str:
        parts = []
        if self.namespaces:
            parts.append(f"{len(self.namespaces)} namespace(s)")
        if self.cluster_objects:
            parts.append(
                f"{len(self.cluster_objects)} cluster object(s): " + ", ".join(self.cluster_objects)
            )
        if self.uncordoned:
            parts.append("uncordoned " + ", ".join(self.uncordoned))
        if self.faults:
            parts.append(f"{len(self.faults)} injected fault(s): " + ", ".join(self.faults))
        text = ("cleaned up " + "; ".join(parts)) if parts else "nothing left to clean up"
        if self.leftovers:
            text += "; STILL PRESENT: " + ", ".join(self.leftovers)
        return text


def delete_registered(
    k8s: K8sClients, registry: NamespaceRegistry, *, pid: int | None = None
) -> list[str]:
    """Delete (without waiting) the namespaces in the registry, e.g. on Ctrl-C in a worker."""
    deleted = []
    for record in registry.entries(pid=pid):
        try:
            objects.delete(k8s, "Namespace", record["namespace"])
            deleted.append(record["namespace"])
        except ApiException as exc:
            log.warning("could not delete namespace %s: %s", record["namespace"], exc.reason)
    return deleted


def uncordon_run_nodes(k8s: K8sClients, run_id: str, *, pid: int | None = None) -> list[str]:
    """Uncordon the nodes the run cordoned (only those of process `pid` when given)."""
    uncordoned = []
    for node in k8s.core.list_node(label_selector=f"{CORDONED_BY_LABEL}={run_id}").items:
        annotations = node.metadata.annotations or {}
        if pid is not None and annotations.get(CORDONED_BY_PID_ANNOTATION) != str(pid):
            continue
        patch = {
            "spec": {"unschedulable": False},
            "metadata": {
                "labels": {CORDONED_BY_LABEL: None},
                "annotations": {CORDONED_BY_PID_ANNOTATION: None},
            },
        }
        try:
            k8s.core.patch_node(node.metadata.name, patch, field_manager=FIELD_MANAGER)
        except ApiException as exc:
            if exc.status != 404:  # a deleted node has nothing left to uncordon
                raise
            continue
        uncordoned.append(node.metadata.name)
    return uncordoned


def labelled_cluster_objects(
    k8s: K8sClients, selector: str, api_versions: Sequence[str] | None = None
) -> list[tuple[str, str, str, str]]:
    """(kind, apiVersion, name, run id) of the cluster-scoped objects `selector` matches, each
    once (a DeviceTaintRule served in two versions is one object)."""
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for kind, api_version in CLUSTER_SCOPED_KINDS:
        if (
            api_versions is not None
            and api_version.startswith("resource.k8s.io/")
            and api_version not in api_versions
        ):
            continue
        try:
            items = objects.ops_for(k8s, kind, api_version).list(label_selector=selector).items
        except ApiException as exc:
            if exc.status == 404:
                continue
            raise
        for item in items:
            run = (item.metadata.labels or {}).get(RUN_LABEL, "")
            found.setdefault((kind, item.metadata.name), (api_version, run))
    order = [kind for kind, _ in CLUSTER_SCOPED_KINDS]  # rules before the classes they name
    ranked = sorted(found.items(), key=lambda item: (order.index(item[0][0]), item[0][1]))
    return [(kind, version, name, run) for (kind, name), (version, run) in ranked]


def sweep_run(
    k8s: K8sClients,
    run_id: str,
    registry: NamespaceRegistry | None,
    *,
    timeout: float,
    api_versions: Sequence[str] | None = None,
    fault_sweeper: FaultSweeper | None = None,
) -> SweepResult:
    """Delete everything labelled `dra-conformance.io/run=<run_id>`, uncordon the nodes the run
    cordoned, undo its injected faults (`fault_sweeper`); wait for namespaces.

    `api_versions`: the resource.k8s.io group versions the cluster serves (skips kinds it
    does not serve instead of provoking 404s)."""
    result = SweepResult()
    if fault_sweeper is not None:
        # First: a fault (a device failing every prepare) can keep a namespace's pods stuck.
        undone, errors = fault_sweeper(run_id)
        result.faults += undone
        result.leftovers += [f"fault: {e}" for e in errors]
    selector = f"{RUN_LABEL}={run_id}"
    names = {ns.metadata.name for ns in k8s.core.list_namespace(label_selector=selector).items}
    names |= {r["namespace"] for r in (registry.entries() if registry else [])}
    for name in sorted(names):
        if objects.delete(k8s, "Namespace", name):
            result.namespaces.append(name)
    for kind, api_version, name, _ in labelled_cluster_objects(k8s, selector, api_versions):
        if objects.delete(k8s, kind, name, api_version=api_version):
            result.cluster_objects.append(f"{kind}/{name}")
    result.uncordoned += uncordon_run_nodes(k8s, run_id)
    deadline = time.monotonic() + timeout
    for name in sorted(names):
        remaining = max(1.0, deadline - time.monotonic())
        try:
            wait_for_deleted(
                lambda n=name: state.read_namespace(k8s, n),
                describe=f"namespace {name}",
                timeout=remaining,
            )
            if registry is not None:
                registry.remove(name)
        except WaitTimeout:
            result.leftovers.append(f"namespace/{name}")
    return result
