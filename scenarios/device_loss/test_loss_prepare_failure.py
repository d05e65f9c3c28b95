"""DRA-LOSS-005: a failing NodePrepareResources keeps the containers from starting, is reported
in a FailedPrepareDynamicResources event with the driver's error, is retried, and the pod runs
once the fault clears.

The v1.37 kubelet retries a pod whose prepare failed at its next sync: the periodic resync
(1-1.5 min) or any update of the pod. The test updates an annotation to get the retry now
instead of waiting for the resync.
"""

from __future__ import annotations

import pytest

from conformance.faults import FaultKind
from conformance.kube import state, waits
from conformance.scenario_api.placement import pick_node

REASON = "FailedPrepareDynamicResources"


def _occurrences(event: dict) -> int:
    return max(int(event.get("count") or 1), int((event.get("series") or {}).get("count") or 0))


def _not_started(pod) -> bool:
    statuses = (pod or {}).get("status", {}).get("containerStatuses") or ()
    return state.pod_phase(pod) == "Pending" and not any(
        (s.get("state") or {}).get("running") or (s.get("state") or {}).get("terminated")
        for s in statuses
    )


@pytest.mark.dra_requirement("DRA-LOSS-005")
@pytest.mark.dra_kubelet_errors("the fail-prepare fault")
@pytest.mark.dra_node_exclusive  # every prepare on the node fails
def test_failed_prepare_is_reported_retried_and_recovers(
    dra_context, k8s, workload, faults, device_lease
):
    node = pick_node(dra_context, lease=device_lease)
    injector = faults.new(FaultKind.FAIL_PREPARE)
    injector.fail_prepare(node)
    workload.claim("fragile")
    workload.pod("fragile", ["fragile"], node=node)

    def failures():
        return [
            e
            for e in workload.events("Pod", "fragile")
            if e.get("reason") == REASON and e.get("type") == "Warning"
        ]

    waits.wait_until(
        failures,
        bool,
        describe=f"a {REASON} warning about pod fragile",
        timeout=dra_context.timeout("podRunning"),
        show=lambda evs: evs or "no such events",
    )
    workload.touch_pod("fragile", 1)  # the retry now, not at the resync
    events = waits.wait_until(
        failures,
        lambda evs: sum(_occurrences(e) for e in evs) >= 2,
        describe=f"two {REASON} warnings about pod fragile (the kubelet retrying)",
        timeout=dra_context.timeout("podRunning"),
        show=lambda evs: (
            [{k: e.get(k) for k in ("type", "reason", "message", "count")} for e in evs]
            or "no such events"
        ),
    )
    # kubelet: "... NodePrepareResources failed for ResourceClaim <claim>: <driver's error>"
    prefix = "NodePrepareResources failed for ResourceClaim fragile: "
    messages = [e.get("message") or "" for e in events]
    driver_errors = [m.split(prefix, 1)[1] for m in messages if prefix in m]
    assert driver_errors and all(e.strip() for e in driver_errors), (
        f"{REASON} events do not carry the driver's error for claim fragile: {messages}"
    )
    if injector.prepare_failure_text:
        assert all(injector.prepare_failure_text in e for e in driver_errors), (
            f"expected the injected error {injector.prepare_failure_text!r} in {driver_errors}"
        )
    pod = workload.read_pod("fragile")
    assert _not_started(pod), (
        f"containers started although prepare failed: {state.pod_summary(pod)}"
    )

    injector.restore()
    workload.touch_pod("fragile", 2)
    workload.wait_running("fragile", abort_on_prepare_failure=False)  # retried after failures
    workload.assert_sees_exactly("fragile", workload.results("fragile"))
