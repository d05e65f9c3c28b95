"""DRA-KUBELET-002: prepare is idempotent, asked the way the kubelet asks.

The kubelet calls NodePrepareResources for a claim it already prepared when it cannot know it
did: after it restarts, its checkpoint restores every claim as not prepared (v1.37.2
pkg/kubelet/cm/dra/claiminfo.go newClaimInfoFromState), and the next pod sandbox that needs the
claim - here a second pod sharing it - has it prepared again (a first pod still running needs
no new sandbox, so it alone would never ask). The driver must answer success with the same
devices; a driver that refuses ("already prepared") keeps the second pod from ever starting.
The kubelet's own count of NodePrepareResources calls since its restart proves it asked.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.kube import state, waits
from conformance.model.outcome import not_run
from conformance.scenario_api.disruption import PodBaseline, assert_undisturbed
from conformance.scenario_api.kubelet_dra import read_kubelet_dra
from conformance.scenario_api.pods import pod_ready
from conformance.scenario_api.running_wait import prepare_failures

# The kubelet's FailedPrepareDynamicResources text when the driver answered the claim with an
# error (v1.37.2 pkg/kubelet/cm/dra/manager.go); "is not registered" is the plugin still
# registering with the restarted kubelet, which the kubelet retries.
REFUSED = "NodePrepareResources failed for ResourceClaim"


@pytest.mark.dra_requirement("DRA-KUBELET-002")
@pytest.mark.dra_node_exclusive(restarts_kubelet=True)
@pytest.mark.dra_kubelet_errors("the restarted kubelet refuses prepares until the plugin is back")
def test_restarted_kubelet_prepares_a_shared_claim_again_with_the_same_device(
    dra_context, k8s, workload, node_restarts, device_lease
):
    driver, node = dra_context.profile.driver, device_lease.node
    node_restarts.check_possible(node)
    workload.claim("shared")
    first = workload.run("first", ["shared"], node=node)
    [held] = workload.results("shared")
    baseline = PodBaseline.of(first)

    node_restarts.restart_kubelet(node)
    workload.pod("second", ["shared"], node=node)
    read = workload.reader_retrying_prepare("second")  # "not registered" yet: retried

    def refused(pod: dict[str, Any] | None) -> str | None:
        uid = ((pod or {}).get("metadata") or {}).get("uid")
        for event in prepare_failures(workload.events("Pod", "second"), uid):
            if REFUSED in (event.get("message") or ""):
                return (
                    f"{driver} refused to prepare claim {workload.ref('shared')} again for pod "
                    f"second after the kubelet on {node} restarted, though it is prepared for "
                    f"pod first: prepare is not idempotent: {event.get('message')}"
                )
        return None

    waits.wait_until(
        read,
        pod_ready,
        describe=f"pod {workload.ref('second')} sharing claim shared to be Running",
        timeout=workload.timeout("podRunning"),
        show=state.pod_summary,
        abort=refused,
    )
    asked = read_kubelet_dra(k8s, node, driver).count("NodePrepareResources")
    if asked == 0:
        not_run(
            f"the kubelet on {node} did not call NodePrepareResources again after its restart "
            "(it kept the claim marked prepared): the driver was not asked twice",
            "run on a Kubernetes version whose kubelet restores claims unprepared (1.37)",
        )
    workload.assert_sees_exactly("second", [held])
    claim = workload.read_claim("shared")
    assert [r.device_id for r in state.allocation_results(claim)] == [held.device_id]
    assert_undisturbed(k8s, [baseline])
    workload.assert_sees_exactly("first", [held])
