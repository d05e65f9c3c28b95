"""Fixtures of the extended_resource suite: a device plugin advertising the profile's extended
resource on one node (DRA-EXT-006)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from deviceplugin_checks import DEVICE_PLUGIN_DIR, DevicePlugin
from extended_checks import PLUGIN_DEVICES, PluginNode, devices_per_node

from conformance.kube import objects, waits
from conformance.kube.builders import container
from conformance.kube.client import K8sClients
from conformance.model.outcome import not_run
from conformance.node_access import NodeAccess, Operation
from conformance.report import add_inventory
from conformance.run.context import RunContext
from conformance.run.node_marks import mark_no_kubelet_restart
from conformance.scenario_api.workloads import MAIN, Workloads

# The kubelet keeps a stopped device plugin's resource this long (endpointStopGracePeriod).
KUBELET_PLUGIN_GRACE_SECONDS = 300.0
# The grace period starts when the kubelet notices the plugin is gone, a little after the stop.
GRACE_SLACK_SECONDS = 30.0


def _forget_plugin_allocations(workload: Workloads, plugin: PluginNode) -> None:
    """Make the kubelet forget the device plugin's resource before the plugin goes.

    The v1.37.2 kubelet keeps taking a resource for a device-plugin resource while it holds
    any allocation record of it, even an empty one left by a failed allocation, and then fails
    the pods DRA serves it to with CreateContainerConfigError "endpoint not found in cache for
    a registered resource" once the stopped plugin's grace period is over. It drops deleted
    pods' records only when it next allocates from a plugin, and rebuilds the records from
    scratch when a plugin's Allocate call fails. So: delete the test's pods, then, with the
    plugin refusing allocations, offer the kubelet a pod that asks for the resource; its
    admission does both and rejects it.
    """
    resource = plugin.plugin.resource_name
    for pod in workload.k8s.core.list_namespaced_pod(workload.namespace).items:
        workload.delete_pod(pod.metadata.name)
    plugin.plugin.refuse_allocations = True
    body = workload.build.pod(
        "plugin-gc",
        workload.namespace,
        image=workload.context.workload_image,
        containers=[container(MAIN, limits={resource: 1})],
        node_name=plugin.node,
        restart_policy="Never",
    )
    objects.create(workload.k8s, body)
    waits.wait_for_pod_phase(
        workload.k8s, workload.namespace, "plugin-gc", "Failed", timeout=workload.timeout("default")
    )
    workload.delete_pod("plugin-gc", grace_period=0)


def _node_offers(k8s: K8sClients, node: str, resource: str) -> tuple[str | None, str | None]:
    """(capacity, allocatable) of `resource` in the node's status."""
    status = k8s.core.read_node(node).status
    return (status.capacity or {}).get(resource), (status.allocatable or {}).get(resource)


def _allocatable(workload: Workloads, node: str, resource: str) -> str | None:
    return _node_offers(workload.k8s, node, resource)[1]


@pytest.fixture(scope="session")
def stopped_plugins(dra_context: RunContext, k8s: K8sClients) -> Iterator[list[tuple[str, str]]]:
    """(node, resource) of device plugins stopped by this worker. Tests run meanwhile: only
    kubelet restarts wait, for the node's mark in the lease book.

    On a cluster the run made (`--dra-cluster kind`) every kubelet restart is the harness's
    own, and each waits for that mark, which outlives the run in the cluster's lease
    book: the run need not wait out the grace period (the summary's inventory says until when
    a kubelet restart is unsafe). On any other cluster someone else may restart a kubelet
    right after the run, so the worker waits before it ends until each node's kubelet has
    dropped the resource, and leaves the nodes clean."""
    stopped: list[tuple[str, str]] = []
    yield stopped
    if dra_context.cluster.provisioned:
        return
    for node, resource in stopped:
        _wait_until_kubelet_forgot_the_plugin(dra_context, k8s, node, resource)


@pytest.fixture
def plugin_node(
    workload: Workloads,
    device_lease: Any,
    stopped_plugins: list[tuple[str, str]],
    node_access: NodeAccess,
) -> Iterator[PluginNode]:
    """The leased node (dra_node_exclusive), with DRA devices of the extended-resource class,
    where a device plugin also advertises the resource. Afterwards the plugin stops and the
    fixture waits until the node no longer offers the resource from it (allocatable 0), so DRA
    serves it there again; it marks the node "no kubelet restart" for the kubelet's grace
    period instead of holding the lease through it."""
    per_node = {n: d for n, d in devices_per_node(workload, "extended-resource").items()}
    node = device_lease.node
    # The plugin serves from the harness host: it needs the node's directory seen from here.
    if (refused := node_access.unavailable(Operation.HOST_PATH, node)) is not None:
        not_run(
            f"the harness can place a device plugin only on a node whose {DEVICE_PLUGIN_DIR} "
            f"it reaches from its host: {refused.problem}",
            refused.remedy,
        )
    plugin_dir = node_access.host_path(node, DEVICE_PLUGIN_DIR)
    if not os.access(plugin_dir, os.W_OK):
        not_run(
            f"{plugin_dir} (the node's device-plugin directory) is not writable by the harness",
            "run dra-conformance as root on the Docker host",
        )
    resource = workload.profile.extended_resource.name
    plugin = DevicePlugin(resource, PLUGIN_DEVICES, plugin_dir)
    plugin.start()
    try:
        waits.wait_until(
            lambda: _allocatable(workload, node, resource),
            lambda a: a == str(len(PLUGIN_DEVICES)),
            describe=f"node {node} to offer {resource}: {len(PLUGIN_DEVICES)} from the device "
            "plugin (status.allocatable)",
            timeout=workload.timeout("default"),
        )
        plugin_node = PluginNode(node, plugin, tuple(per_node[node]))
        yield plugin_node
        _forget_plugin_allocations(workload, plugin_node)
    finally:
        stopped_at = time.time()
        plugin.stop()
        # Before anything else: even if the wait below fails, the node is marked.
        unsafe_until = stopped_at + KUBELET_PLUGIN_GRACE_SECONDS + GRACE_SLACK_SECONDS
        mark_no_kubelet_restart(
            device_lease.book,
            node,
            unsafe_until,
            f"DRA-EXT-006 stopped a device plugin of {resource}; until the kubelet's grace "
            "period is over, a restarted kubelet reloads its stale allocations",
        )
        add_inventory(
            workload.request,
            "kubelet_restart_unsafe_until",
            {node: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unsafe_until))},
        )
        stopped_plugins.append((node, resource))
        waits.wait_until(
            lambda: _allocatable(workload, node, resource),
            lambda a: a in (None, "0"),
            describe=f"node {node} to stop offering {resource} from the stopped device plugin",
            timeout=workload.timeout("default"),
        )


def _wait_until_kubelet_forgot_the_plugin(
    context: RunContext, k8s: K8sClients, node: str, resource: str
) -> None:
    """Wait out the v1.37.2 kubelet's grace period for a stopped device plugin (5 min).

    Until it ends, the kubelet's device-manager checkpoint still lists the resource and the
    allocations the plugin made. A kubelet restarted in that window (DRA-DRAIN-005 restarts
    one) reloads them, and then fails every DRA-served pod of the resource on the node with
    CreateContainerConfigError "endpoint not found in cache for a registered resource" for
    good. When the period ends the kubelet drops the resource, rewrites its checkpoint without
    it and reports capacity 0 (the plugin's unhealthy devices count until then)."""
    waits.wait_until(
        lambda: _node_offers(k8s, node, resource)[0],
        lambda c: c in (None, "0"),
        describe=f"the kubelet on {node} to drop {resource} of the stopped device plugin "
        f"(status.capacity 0 once its 5-minute grace period is over), so that a kubelet "
        "restart later cannot bring stale device-plugin allocations back",
        timeout=KUBELET_PLUGIN_GRACE_SECONDS + context.timeout("default"),
        interval=5.0,
    )
