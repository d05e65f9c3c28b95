"""DRA-EXT-006: a device plugin and DRA serving the same extended resource.

v1.37.2's scheduler serves an extended resource through DRA only on nodes whose allocatable
does not list it; where a device plugin advertises it, the plugin alone serves it, so no
device is counted twice: pods placed there never exceed what the plugin advertises, even
with the node's DRA devices free.
"""

from __future__ import annotations

from typing import Any

import pytest
from deviceplugin_checks import env_name
from extended_checks import (
    PLUGIN_DEVICES,
    PluginNode,
    devices_per_node,
    extended_pod,
    special_claim,
)

from conformance.kube import state, waits
from conformance.scenario_api.workloads import MAIN, Workloads

KIND = "extended-resource"


def _claims_of(workload: Workloads, pod: dict[str, Any]) -> list[str]:
    uid = pod["metadata"]["uid"]
    return [
        c.metadata.name
        for c in workload.k8s.resource.list_namespaced_resource_claim(workload.namespace).items
        if any(o.uid == uid for o in c.metadata.owner_references or ())
    ]


@pytest.mark.dra_requirement("DRA-EXT-006")
@pytest.mark.dra_node_exclusive(KIND)  # a device plugin serves the resource on the node
@pytest.mark.dra_run_early("the kubelet keeps a stopped device plugin's resource 5 minutes")
@pytest.mark.dra_devices(KIND, count=1)  # pod dra-user, on another node
def test_device_plugin_and_dra_serve_the_same_resource(
    workload: Workloads, plugin_node: PluginNode
) -> None:
    resource = workload.profile.extended_resource.name
    node = plugin_node.node

    extended_pod(workload, "plugin-user", resource, 1, node=node)
    pod = workload.wait_running("plugin-user")
    assert not (pod.get("status") or {}).get("extendedResourceClaimStatus"), (
        f"on {node} the device plugin serves {resource}, yet the pod got a DRA claim: "
        f"{pod['status'].get('extendedResourceClaimStatus')}"
    )
    assert not _claims_of(workload, pod), (
        f"claims made for plugin-user: {_claims_of(workload, pod)}"
    )
    assert plugin_node.plugin.allocations == [PLUGIN_DEVICES], (
        f"the device plugin should have allocated {PLUGIN_DEVICES} once, allocated "
        f"{plugin_node.plugin.allocations}"
    )
    output = state.pod_workload_output(workload.k8s, workload.namespace, "plugin-user", MAIN)
    assert output.env.get(env_name(resource)) == ",".join(PLUGIN_DEVICES), (
        f"the container should see the plugin's {env_name(resource)}={','.join(PLUGIN_DEVICES)}"
    )
    assert not workload.seen("plugin-user"), (
        f"the container got DRA devices {sorted(workload.seen('plugin-user'))} on top of the "
        "device plugin's"
    )

    # The plugin's only device is taken; the node's DRA devices are free but not counted.
    extended_pod(workload, "one-too-many", resource, 1, node=node)
    condition = waits.wait_for_pod_scheduled_false(
        workload.k8s, workload.namespace, "one-too-many", timeout=workload.timeout("claimAllocated")
    )
    assert f"Insufficient {resource}" in (condition.get("message") or ""), (
        f"one-too-many should be unschedulable for lack of {resource} on {node}: {condition}"
    )
    waits.ensure_for(
        lambda: workload.read_pod("one-too-many"),
        lambda p: (
            p is not None
            and not p["spec"].get("nodeName")
            and not (p.get("status") or {}).get("extendedResourceClaimStatus")
            and not _claims_of(workload, p)
        ),
        describe=f"a second pod for {resource} on {node} to stay unscheduled with no DRA claim "
        f"(DRA devices there: {list(plugin_node.dra_devices)})",
        duration=min(workload.timeout("settle"), 5.0),  # the scheduler has decided already
        show=state.pod_summary,
    )

    others = sorted(n for n in devices_per_node(workload, KIND) if n != node)
    if others:  # DRA keeps serving the resource on nodes without the plugin
        extended_pod(workload, "dra-user", resource, 1, node=others[0])
        dra_pod = workload.wait_running("dra-user")
        extended = workload.profile.extended_resource
        _, results = special_claim(workload, dra_pod, resource, extended.device_class, 1)
        workload.assert_sees_exactly("dra-user", results)
