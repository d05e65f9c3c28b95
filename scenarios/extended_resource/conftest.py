"""Fixtures of the extended_resource suite: a device plugin advertising the profile's extended
resource on one node (DRA-EXT-006)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from extended_checks import PLUGIN_DEVICES, PluginNode, devices_per_node

from conformance.deviceplugin import DevicePlugin, kind_node_plugin_dir
from conformance.kube import waits
from conformance.requirements import NOT_APPLICABLE_PREFIX
from conformance.workloads import Workloads


def _allocatable(workload: Workloads, node: str, resource: str) -> str | None:
    return (workload.k8s.core.read_node(node).status.allocatable or {}).get(resource)


@pytest.fixture
def plugin_node(workload: Workloads) -> Iterator[PluginNode]:
    """A node with DRA devices of the extended-resource class where a device plugin also
    advertises the resource; afterwards the plugin stops and the fixture waits until the node
    no longer offers the resource from it (allocatable 0), so DRA serves it there again."""
    container_of = dict(workload.context.cluster.node_containers)
    per_node = {n: d for n, d in devices_per_node(workload, "extended-resource").items()}
    candidates = sorted(n for n in per_node if n in container_of)
    if not candidates:
        pytest.skip(
            NOT_APPLICABLE_PREFIX + "the harness can place a device plugin only on nodes it "
            "runs as containers (kind); this cluster's nodes are not reachable that way"
        )
    node = candidates[0]
    plugin_dir = kind_node_plugin_dir(container_of[node])
    if not os.access(plugin_dir, os.W_OK):
        pytest.skip(
            NOT_APPLICABLE_PREFIX + f"{plugin_dir} (the node's device-plugin directory) is not "
            "writable by the harness; run it as root on the Docker host"
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
        yield PluginNode(node, plugin, tuple(per_node[node]))
    finally:
        plugin.stop()
        waits.wait_until(
            lambda: _allocatable(workload, node, resource),
            lambda a: a in (None, "0"),
            describe=f"node {node} to stop offering {resource} from the stopped device plugin",
            timeout=workload.timeout("default"),
        )
