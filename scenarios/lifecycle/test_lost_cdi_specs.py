"""DRA-LIFE-003: with the CDI spec files gone and the driver's checkpoint kept (what a reboot
that empties /run does to a driver checkpointing on disk), a restarted container of a pod that
still runs gets its devices again.

A container restart in a running pod does not call NodePrepareResources: the kubelet hands the
runtime the claim's CDI device ids it keeps, and the runtime resolves them from the spec files
on the node. So a driver has to write the specs of the claims it holds prepared when it starts.
The test removes the claim's spec files on the node it leased whole (found through the kubelet's
DRA checkpoint: cdi_loss_checks), restarts the driver's plugin pod there, and
once that is ready has the workload container exit: the kubelet starts it again in the same pod,
which must run and see the same device. A driver still starting in the background when its pod
is ready is late: the runtime's refusal ends the test.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pytest
from cdi_loss_checks import LostSpecs, remove_claim_cdi_specs, require_file_access

from conformance.kube import state, waits
from conformance.kube.podexec import ask_workload_to_exit
from conformance.report import record_metric
from conformance.scenario_api.pods import MAIN, cannot_start, pod_ready, restart_count


@pytest.mark.dra_requirement("DRA-LIFE-003")
@pytest.mark.dra_kubelet_errors("the kubelet cannot reach the restarting plugin")
@pytest.mark.dra_node_exclusive  # removes CDI specs and restarts the driver's plugin pod there
def test_restarted_container_gets_its_device_after_the_cdi_specs_were_lost(
    request, dra_context, workload, node_access, driver_restarts, device_lease
):
    driver, node = dra_context.profile.driver, device_lease.node
    require_file_access(node_access, node)
    workload.claim("resident")
    pod = workload.run("resident", ["resident"], node=node)
    [held] = workload.results("resident")
    uid = workload.read_claim("resident")["metadata"]["uid"]
    claim = f"claim {workload.ref('resident')} ({uid})"
    lost = remove_claim_cdi_specs(node_access, node, dra_context.profile.cdi, uid, claim)

    started = time.monotonic()
    old, _ = driver_restarts.restart(node)
    record_metric(request, "driver_restart_to_ready", time.monotonic() - started, node=node)
    replaced = f"its plugin pod {old['metadata']['name']} was replaced"

    before = restart_count(pod)
    ask_workload_to_exit(workload.k8s, workload.namespace, "resident", MAIN)
    restarted = time.monotonic()
    after = waits.wait_until(
        lambda: workload.read_pod("resident"),
        lambda p: restart_count(p) > before and pod_ready(p),
        # Short: the runtime's refusal (abort) is what a truncated report line must still show.
        describe=f"container {MAIN} of pod {workload.ref('resident')} to start again "
        f"(restartCount > {before}, ready) after {replaced}",
        timeout=workload.timeout("podRunning"),
        show=state.pod_summary,
        abort=lambda p: _not_rewritten(p, lost, driver),
    )
    record_metric(request, "container_restart_to_ready", time.monotonic() - restarted, node=node)
    assert after["metadata"]["uid"] == pod["metadata"]["uid"], "pod resident was replaced"
    assert after["spec"]["nodeName"] == node
    workload.assert_sees_exactly("resident", [held])


def _not_rewritten(pod: Mapping[str, Any] | None, lost: LostSpecs, driver: str) -> str | None:
    refused = cannot_start(pod)
    if refused is None:
        return None
    return (
        f"{driver} did not write the CDI specs of the claim it holds prepared again when its "
        f"plugin started: {refused} (removed before the restart: {lost})"
    )
