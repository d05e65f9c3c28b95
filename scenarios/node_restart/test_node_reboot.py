"""DRA-REBOOT-001/002: a node that restarts (on kind: its container restarts, and /run, a
tmpfs, comes back empty, so CDI specs kept there are gone) runs its pods with claims again
with the same devices, and serves new claims.

After the restart the kubelet sees new pod sandboxes and calls NodePrepareResources again for
every claim of the node's pods (its checkpoint restores claims as not prepared, v1.37.2
pkg/kubelet/cm/dra/claiminfo.go newClaimInfoFromState): the driver has to answer with CDI
devices that exist again."""

from __future__ import annotations

import time

import pytest

from conformance.kube import state, waits
from conformance.report import record_metric
from conformance.scenario_api.disruption import PodBaseline
from conformance.scenario_api.republish import Republish

CANNOT_START = ("CreateContainerError", "CreateContainerConfigError", "RunContainerError")


def _cannot_start(pod) -> str | None:
    for status in (pod or {}).get("status", {}).get("containerStatuses") or ():
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in CANNOT_START:
            return (
                f"container {status.get('name')} cannot start after the node restart: "
                f"{waiting.get('reason')}: {waiting.get('message')}"
            )
    return None


def _reboot_and_wait_for_driver(request, dra_context, k8s, node_restarts, node: str) -> float:
    """Restart the node; return once the restarted kubelet's slice wipe is over and the driver
    published the same devices again in new slices. Returns when the restart began."""
    driver = dra_context.profile.driver
    republish = Republish.before_restart(k8s, driver, node)
    started = time.monotonic()
    node_restarts.restart_node(node)
    republish.wait(
        after="after the node restarted",
        timeout=dra_context.timeout("slicesPublished") + dra_context.timeout("driverReady"),
    )
    record_metric(request, "node_restart_to_slices", time.monotonic() - started, node=node)
    return started


@pytest.mark.dra_requirement("DRA-REBOOT-001")
@pytest.mark.dra_kubelet_errors(
    "the restarted node's kubelet refuses prepares until the plugin is back"
)
@pytest.mark.dra_node_exclusive(restarts_kubelet=True)  # restarts the node
def test_node_restart_runs_pods_again_with_the_same_devices(
    request, dra_context, k8s, workload, node_restarts, device_lease
):
    node = device_lease.node
    node_restarts.check_reboot_possible(node)
    workload.claim("resident")
    pod = workload.run("resident", ["resident"], node=node)
    [held] = workload.results("resident")
    baseline = PodBaseline.of(pod)
    started = _reboot_and_wait_for_driver(request, dra_context, k8s, node_restarts, node)

    # Its containers died with the node: the kubelet starts them again in a new sandbox,
    # which needs the claim prepared again (CDI devices that resolve).
    after = waits.wait_until(
        workload.reader_retrying_prepare("resident"),
        lambda p: (
            all(
                c.get("ready") and int(c.get("restartCount") or 0) > baseline.restarts[c["name"]]
                for c in (p or {}).get("status", {}).get("containerStatuses") or ()
            )
            and state.pod_phase(p) == "Running"
        ),
        describe="pod resident to run again (every container restarted and ready) after the "
        f"restart of node {node}",
        # A prepare that failed while the plugin was still coming back (not registered) is
        # retried by the kubelet only at its next resync, 60-90 s later, unless the pod is
        # updated: the read touches the pod every 10 s after such a failure (prepare_retry).
        # The timeout stays driverReady, for a kubelet that retries at its resync anyway.
        timeout=dra_context.timeout("driverReady"),
        show=state.pod_summary,
        abort=_cannot_start,
    )
    record_metric(request, "node_restart_to_pod_running", time.monotonic() - started, node=node)
    assert after["metadata"]["uid"] == baseline.uid, "pod resident was replaced"
    assert after["spec"]["nodeName"] == node
    claim = workload.read_claim("resident")
    assert [r.device_id for r in state.allocation_results(claim)] == [held.device_id], (
        "claim resident's status.allocation changed across the node restart"
    )
    assert [r.uid for r in state.reserved_for(claim)] == [baseline.uid]
    workload.assert_sees_exactly("resident", [held])


@pytest.mark.dra_requirement("DRA-REBOOT-002")
@pytest.mark.dra_kubelet_errors(
    "the restarted node's kubelet refuses prepares until the plugin is back"
)
@pytest.mark.dra_node_exclusive(restarts_kubelet=True)  # restarts the node
def test_node_restart_serves_new_claims(
    request, dra_context, k8s, workload, node_restarts, device_lease
):
    driver = dra_context.profile.driver
    node = device_lease.node
    node_restarts.check_reboot_possible(node)
    started = _reboot_and_wait_for_driver(request, dra_context, k8s, node_restarts, node)
    workload.claim("newcomer")
    # The plugin may still be registering: the kubelet retries a prepare that found it
    # "not registered", so a FailedPrepareDynamicResources does not end this wait.
    workload.run("newcomer", ["newcomer"], node=node, abort_on_prepare_failure=False)
    record_metric(request, "node_restart_to_new_pod", time.monotonic() - started, node=node)
    [got] = workload.results("newcomer")
    assert got.driver == driver
    published = workload.node_device_ids(node)
    assert got.device_id in published, f"newcomer got {got.device_id}, not a device of {node}"
    workload.assert_sees_exactly("newcomer", [got])
