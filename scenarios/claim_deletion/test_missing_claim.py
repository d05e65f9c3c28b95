"""DRA-DEL-004: a pod referencing a claim that does not exist waits for it.

v1.37.2 holds such a pod in the scheduler's PreEnqueue step (the DynamicResources plugin
cannot find the claim), which sets no condition and emits no event; whatever the pod does
show must name the missing claim.
"""

from __future__ import annotations

import pytest
from deletion_checks import assert_reserved_for, not_scheduled, single_result

from conformance.kube import state, waits
from conformance.scenario_api.workloads import Workloads

CLAIM = "arrives-later"


def _mentions_of_claim(workload: Workloads, pod: dict) -> list[str]:
    """Messages about the pod that do not name the claim (should be none)."""
    texts = [
        c.get("message") or ""
        for c in (pod.get("status") or {}).get("conditions") or ()
        if c.get("type") == "PodScheduled" and c.get("status") == "False"
    ]
    texts += [
        e.get("message") or ""
        for e in workload.events("Pod", "waiter")
        if e.get("reason") == "FailedScheduling"
    ]
    return [t for t in texts if CLAIM not in t]


@pytest.mark.dra_requirement("DRA-DEL-004")
@pytest.mark.dra_devices("default")
def test_pod_waits_for_missing_claim_then_runs(workload: Workloads) -> None:
    workload.pod("waiter", [CLAIM])

    def waiting(pod: dict | None) -> bool:
        return not_scheduled(pod) and state.pod_phase(pod) == "Pending"

    pod = waits.ensure_for(
        lambda: workload.read_pod("waiter"),
        waiting,
        describe=f"the pod referencing missing claim {CLAIM} to stay Pending and unscheduled",
        duration=workload.timeout("settle"),
        show=state.pod_summary,
    )
    unrelated = _mentions_of_claim(workload, pod)
    assert not unrelated, (
        f"the pod waits for missing claim {CLAIM}, but its scheduling condition or events "
        f"give other reasons: {unrelated}"
    )

    workload.claim(CLAIM)
    pod = workload.wait_running("waiter")
    claim = workload.wait_allocated(CLAIM)
    result = single_result(workload, CLAIM)
    assert workload.context.device(result.device_id) is not None, (
        f"claim {CLAIM} was allocated {result.device_id}, which no published slice offers"
    )
    assert_reserved_for(claim, pod)
    workload.assert_sees_exactly("waiter", [result])
