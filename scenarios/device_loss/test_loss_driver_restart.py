"""DRA-LOSS-006: restarting the driver's kubelet-plugin pod keeps running pods running and
their devices usable, republishes the same devices, and new claims work afterwards.

"Republishes" is proved on slices the restarted plugin wrote: the old pod's slices may stay
through a quick restart (the kubelet wipes them only after 30 s without a plugin), and a driver
need not rewrite slices that already match. So once the same devices are seen, the test deletes
the node's slices, as the kubelet would, and the restarted plugin must publish them again in
new ones (conformance.scenario_api.republish)."""

from __future__ import annotations

import time

import pytest

from conformance.kube import slices, state, waits
from conformance.report import record_metric
from conformance.scenario_api.disruption import PodBaseline, assert_undisturbed
from conformance.scenario_api.republish import Republish


@pytest.mark.dra_requirement("DRA-LOSS-006")
@pytest.mark.dra_kubelet_errors("the kubelet cannot reach the restarting plugin")
@pytest.mark.dra_node_exclusive  # restarts the driver's plugin pod of the node
def test_driver_restart_keeps_pods_devices_and_serves_new_claims(
    request, dra_context, k8s, workload, driver_restarts, device_lease
):
    driver = dra_context.profile.driver
    workload.claim("survivor")
    pod = workload.run("survivor", ["survivor"], node=device_lease.node)
    node = pod["spec"]["nodeName"]
    [held] = workload.results("survivor")
    baseline = PodBaseline.of(pod)
    republish = Republish.before_restart(k8s, driver, node)
    before = republish.devices

    started = time.monotonic()
    old, new = driver_restarts.restart(node)
    replaced = f"its plugin pod {old['metadata']['name']} was replaced by {new['metadata']['name']}"
    waits.wait_until(
        lambda: slices.DeviceSnapshot.of(slices.current_devices(k8s, driver, node)),
        lambda now: not before.differences(now),
        describe=f"{driver} to publish the same devices for {node} after {replaced}",
        timeout=dra_context.timeout("slicesPublished"),
        show=lambda now: before.differences(now),
    )
    record_metric(request, "driver_restart_to_ready", time.monotonic() - started, node=node)
    # Those may be the old pod's slices: only slices written after the restart prove that the
    # restarted plugin publishes the devices.
    republish.wiped().wait(
        after=f"after {replaced} and the node's slices were deleted",
        timeout=dra_context.timeout("slicesPublished"),
    )

    assert_undisturbed(k8s, [baseline])
    claim = workload.read_claim("survivor")
    assert [r.device_id for r in state.allocation_results(claim)] == [held.device_id]
    assert [r.uid for r in state.reserved_for(claim)] == [baseline.uid]

    # A container of the running pod that restarts now must still get its device: the
    # restarted driver has to know what it prepared before (its checkpoint, CDI specs).
    workload.restart_container("survivor")
    workload.assert_sees_exactly("survivor", [held])

    workload.claim("newcomer")
    # The plugin may still be registering: the kubelet retries a prepare that found it
    # "not registered", so a FailedPrepareDynamicResources does not end this wait.
    workload.run("newcomer", ["newcomer"], node=node, abort_on_prepare_failure=False)
    [got] = workload.results("newcomer")
    assert got.driver == driver
    published = workload.node_device_ids(node)
    assert got.device_id in published, f"newcomer got {got.device_id}, not a device of {node}"
    workload.assert_sees_exactly("newcomer", [got])
