"""DRA-DEL-001: a claim deleted while a pod uses it is protected until the pod is gone."""

from __future__ import annotations

from typing import Any

import pytest
from deletion_checks import (
    DELETE_PROTECTION,
    assert_reserved_for,
    not_scheduled,
    restart_counts,
    running_ready,
    single_result,
    uid,
)

from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.scenario_api.device_reuse import ReuseProbe
from conformance.scenario_api.workloads import Workloads


@pytest.mark.dra_requirement("DRA-DEL-001")
@pytest.mark.dra_devices("default", guard=True)  # the reuse probe's devices
def test_claim_deleted_in_use_stays_until_its_pod_is_gone(
    workload: Workloads, k8s: K8sClients
) -> None:
    ns = workload.namespace
    workload.claim("in-use")
    user = workload.run("user", ["in-use"])
    device = single_result(workload, "in-use")
    claim_uid = uid(workload.read_claim("in-use"))
    # Queued before the deletion, so "free again" is a transition we watch happen.
    probe = ReuseProbe.start(workload, device.device_id)
    probe.assert_blocked()

    workload.delete_claim("in-use")
    deleting = workload.read_claim("in-use")
    assert deleting is not None, (
        "a claim reserved for a running pod disappeared as soon as it was deleted; it must "
        f"stay until the pod is gone (finalizer {DELETE_PROTECTION})"
    )
    meta = deleting["metadata"]
    assert meta.get("deletionTimestamp"), f"no deletionTimestamp after delete: {meta}"
    assert DELETE_PROTECTION in (meta.get("finalizers") or []), (
        f"claim in use lacks finalizer {DELETE_PROTECTION}: finalizers {meta.get('finalizers')}"
    )
    assert state.allocation_results(deleting) == [device], (
        f"the allocation changed on delete: {state.claim_summary(deleting)}"
    )
    assert_reserved_for(deleting, user)

    workload.pod("latecomer", ["in-use"])
    restarts = restart_counts(user)

    def observe() -> dict[str, Any]:
        return {
            "user": workload.read_pod("user"),
            "latecomer": workload.read_pod("latecomer"),
            "claim": workload.read_claim("in-use"),
        }

    waits.ensure_for(
        observe,
        lambda v: (
            running_ready(v["user"])
            and restart_counts(v["user"]) == restarts
            and not_scheduled(v["latecomer"])
            and v["claim"] is not None
            and bool(v["claim"]["metadata"].get("deletionTimestamp"))
        ),
        describe="the pod using the deleted claim to keep running (no restarts), the claim "
        "to stay (being deleted), and a new pod referencing it to stay unscheduled",
        duration=workload.timeout("settle"),
        show=lambda v: {
            "user": state.pod_summary(v["user"]),
            "latecomer": state.pod_summary(v["latecomer"]),
            "claim": state.claim_summary(v["claim"]),
        },
    )

    workload.delete_pod("user")
    waits.wait_for_deleted(
        lambda: workload.read_claim("in-use"),
        describe=f"ResourceClaim {ns}/in-use (deleted while in use, its pod now gone)",
        timeout=workload.timeout("podDeleted"),
    )
    assert not_scheduled(workload.read_pod("latecomer")), (
        "the pod referencing the deleted claim was scheduled: "
        f"{state.pod_summary(workload.read_pod('latecomer'))}"
    )
    probe.wait_reallocated(released_uids={claim_uid})
