"""DRA-KUBELET-001: a kubelet restart alone leaves running pods alone, and the driver's plugin
registers again with the restarted kubelet, so new claims on the node are prepared.

A restarting kubelet deletes every ResourceSlice of its node (v1.37.2
pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go, wipeResourceSlices at start), so the driver
must publish them again; the kubelet prepares claims only through a registered plugin, so a pod
with a new claim running on the node proves the re-registration."""

from __future__ import annotations

import time

import pytest

from conformance.kube import state
from conformance.report import record_metric
from conformance.scenario_api.disruption import PodBaseline, assert_undisturbed
from conformance.scenario_api.republish import Republish


@pytest.mark.dra_requirement("DRA-KUBELET-001")
@pytest.mark.dra_kubelet_errors("the restarted kubelet refuses prepares until the plugin is back")
@pytest.mark.dra_node_exclusive(at_least=2, restarts_kubelet=True)  # two claims there
def test_kubelet_restart_keeps_pods_and_prepares_new_claims(
    request, dra_context, k8s, workload, node_restarts, device_lease
):
    driver = dra_context.profile.driver
    node = device_lease.node
    node_restarts.check_possible(node)  # not run where no kubelet can be restarted
    workload.claim("survivor")
    pod = workload.run("survivor", ["survivor"], node=node)
    [held] = workload.results("survivor")
    baseline = PodBaseline.of(pod)
    republish = Republish.before_restart(k8s, driver, node)

    started = time.monotonic()
    node_restarts.restart_kubelet(node)
    # The restarted kubelet deleted the old slices; the same devices must come back in new ones.
    republish.wait(
        after="after the restarted kubelet deleted the node's slices",
        timeout=dra_context.timeout("slicesPublished"),
    )
    record_metric(request, "kubelet_restart_to_slices", time.monotonic() - started, node=node)

    # Only a plugin registered with the new kubelet can prepare this claim.
    workload.claim("newcomer")
    # The plugin may still be registering: the kubelet retries a prepare that found it
    # "not registered", so a FailedPrepareDynamicResources does not end this wait.
    workload.run("newcomer", ["newcomer"], node=node, abort_on_prepare_failure=False)
    record_metric(request, "kubelet_restart_to_new_pod", time.monotonic() - started, node=node)
    [got] = workload.results("newcomer")
    assert got.driver == driver
    published = workload.node_device_ids(node)
    assert got.device_id in published, f"newcomer got {got.device_id}, not a device of {node}"
    workload.assert_sees_exactly("newcomer", [got])

    # The pod that ran through the restart: same containers (containerID), claim and device.
    assert_undisturbed(k8s, [baseline])
    claim = workload.read_claim("survivor")
    assert [r.device_id for r in state.allocation_results(claim)] == [held.device_id]
    assert [r.uid for r in state.reserved_for(claim)] == [baseline.uid]
    workload.assert_sees_exactly("survivor", [held])
