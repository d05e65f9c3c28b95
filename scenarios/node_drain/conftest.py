"""Fixtures of the node-drain suite: cordon/drain/uncordon that always uncordons, and a Node
deletion that always brings the node back.

Both depend on `test_namespace` (so they are torn down before it: uncordon first, then the
namespace goes) and hence on `device_lease`. A worker killed mid-test leaves its nodes labelled
`dra-conformance.io/cordoned-by-run=<run>`; the end-of-run sweep uncordons them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.kube import drain, nodes
from conformance.kube.builders import Builders
from conformance.kube.client import K8sClients
from conformance.kube.cordon_seen import await_cordon_seen
from conformance.kube.daemonsets import wait_driver_ready
from conformance.node_access import NodeAccess, Operation, not_run_unless_available
from conformance.run.context import RunContext
from conformance.scenario_api.pods import node_selector_for


class NodeOps:
    """Cordon and drain nodes for one test; `restore()` uncordons what it cordoned."""

    def __init__(self, context: RunContext, k8s: K8sClients, namespace: str) -> None:
        self.context = context
        self.k8s = k8s
        self.namespace = namespace
        self.cordoned: list[str] = []

    def cordon(self, node: str) -> None:
        """Cordon, and return once the scheduler has seen it: a pod created right after the
        cordon must not be placed from the scheduler's stale cache."""
        if drain.cordon(self.k8s, node, self.context.run_id):
            self.cordoned.append(node)
        selector = node_selector_for(self.k8s.to_dict(self.k8s.core.read_node(node)))
        build = Builders(self.context.run_id)
        await_cordon_seen(
            self.k8s,
            node,
            namespace=self.namespace,
            probe=lambda name: build.pod(
                name,
                self.namespace,
                image=self.context.workload_image,
                node_selector=selector,
                termination_grace_period_seconds=0,
            ),
            timeout=self.context.timeout("default"),
        )

    def uncordon(self, node: str) -> None:
        if node in self.cordoned:
            drain.uncordon(self.k8s, node)
            self.cordoned.remove(node)

    def drain(self, node: str, **kwargs: Any) -> drain.DrainResult:
        """Cordon and evict this test's pods on `node` through the Eviction API (see
        conformance/kube/drain.py for why only this test's namespace)."""
        self.cordon(node)
        return drain.drain(
            self.k8s,
            node,
            run_id=self.context.run_id,
            timeout=self.context.timeout("eviction"),
            namespaces=[self.namespace],
            **kwargs,
        )

    def restore(self) -> None:
        for node in list(self.cordoned):
            self.uncordon(node)


@pytest.fixture
def node_ops(dra_context: RunContext, k8s: K8sClients, test_namespace: str) -> Iterator[NodeOps]:
    ops = NodeOps(dra_context, k8s, test_namespace)
    try:
        yield ops
    finally:
        ops.restore()


class NodeDeletion:
    """Delete Node objects and bring them back (a kubelet restart re-registers the Node). Each
    deletion is recorded first, so the end-of-run sweep restores a node whose test was killed
    before this teardown ran."""

    def __init__(self, context: RunContext, k8s: K8sClients, access: NodeAccess) -> None:
        self.context = context
        self.k8s = k8s
        self.access = access
        self.registry = nodes.DeletedNodeRegistry(context.harness_dir / nodes.DELETED_NODES_DIR)
        self.deleted: list[nodes.NodeSnapshot] = []

    def check_restorable(self, node: str) -> None:
        """Not run unless the node can be brought back: only a restarted kubelet re-registers."""
        with not_run_unless_available():
            self.access.require(Operation.RESTART_KUBELET, node)

    def delete(self, node: str) -> nodes.NodeSnapshot:
        self.check_restorable(node)
        snapshot = nodes.NodeSnapshot.read(self.k8s, node)
        self.registry.add(snapshot)
        self.deleted.append(snapshot)
        self.k8s.core.delete_node(node)
        return snapshot

    def restore(self) -> None:
        timeout = self.context.timeout("driverReady")
        restored: list[str] = []
        while self.deleted:
            snapshot = self.deleted.pop()
            restored.append(snapshot.name)
            current = nodes.read_node(self.k8s, snapshot.name)
            if current is None or current["metadata"]["uid"] != snapshot.uid:
                nodes.restore_node(self.k8s, snapshot, self.access.restart_kubelet, timeout=timeout)
            self.registry.remove(snapshot.name)
        if restored:  # those nodes only: another test may be disrupting another node
            wait_driver_ready(self.k8s, self.context.profile, timeout=timeout, nodes=restored)


@pytest.fixture
def node_deletion(
    dra_context: RunContext, k8s: K8sClients, test_namespace: str, node_access: NodeAccess
) -> Iterator[NodeDeletion]:
    deletion = NodeDeletion(dra_context, k8s, node_access)
    try:
        yield deletion
    finally:
        deletion.restore()
