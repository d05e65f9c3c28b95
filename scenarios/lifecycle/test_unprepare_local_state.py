"""DRA-LIFE-001: unprepare works from the driver's own state, not from the claim object.

The kubelet sends NodeUnprepareResources with the claim's namespace, name and UID only; by then
the claim may be gone. A force delete (grace period 0) removes the pod object at once, the claim
controller frees its claims, and a claim already marked for deletion (or one generated for the
pod) disappears, all while the kubelet is still stopping the pod (it gives the containers at
least 2 s). A driver that reads the claim to unprepare it then fails, the kubelet retries every
few seconds for ever, and nothing in the API shows it: no pod to carry an event, no claim, a
device that looks free. Only the kubelet sees it, so the test reads the kubelet's metrics on the
node it leased whole (no other test's claims there): the claims it holds prepared for the driver
(`dra_resource_claims_in_use`) and its failed `UnprepareResources` operations.
"""

from __future__ import annotations

import time

import pytest

from conformance.kube import waits
from conformance.kube.builders import container
from conformance.kube.client import K8sClients
from conformance.model.outcome import not_run
from conformance.report import record_metric
from conformance.scenario_api.kubelet_dra import (
    CLAIMS_IN_USE,
    KubeletDra,
    describe_failures,
    read_kubelet_dra,
)
from conformance.scenario_api.workloads import Workloads

# The container exits at once on SIGTERM; its preStop hook holds the kubelet for the seconds a
# force delete still grants (at least 2), so the claim is gone before the kubelet unprepares.
SLOW_TO_STOP = {
    **container("main", claims=["doomed"]),
    "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", "sleep 5"]}}},
}


@pytest.mark.dra_requirement("DRA-LIFE-001")
@pytest.mark.dra_node_exclusive  # the node's kubelet figures are this test's alone
def test_force_deleted_pods_deleted_claim_is_unprepared(
    request: pytest.FixtureRequest, workload: Workloads, k8s: K8sClients, device_lease
) -> None:
    node, driver = device_lease.node, workload.profile.driver
    before = read_kubelet_dra(k8s, node, driver)
    if before.claims_in_use is None:
        not_run(
            f"the kubelet of node {node} does not expose {CLAIMS_IN_USE}",
            "run on a Kubernetes version whose kubelet exposes it (1.34 and later)",
        )
    workload.claim("doomed")
    workload.run("victim", ["doomed"], node=node, containers=[SLOW_TO_STOP])
    held = read_kubelet_dra(k8s, node, driver)
    assert held.claims_in_use == before.claims_in_use + 1, (
        f"the kubelet on {node} should hold one more claim of {driver} prepared with pod "
        f"victim running ({CLAIMS_IN_USE} {before.claims_in_use} before, {held.claims_in_use} now)"
    )

    # Marked for deletion first: delete-protection keeps it while the pod is there, and the
    # claim controller removes it the moment the force delete removes the pod object.
    workload.delete_claim("doomed")
    workload.delete_pod("victim", wait=False, grace_period=0)
    deleted = time.monotonic()
    waits.wait_until(
        lambda: workload.read_claim("doomed"),
        lambda claim: claim is None,
        describe=f"ResourceClaim {workload.ref('doomed')} to be gone (its pod was force-deleted)",
        timeout=workload.timeout("podDeleted"),
        interval=0.2,
        show=lambda claim: (claim or {}).get("status"),
    )
    if not _still_prepared(read_kubelet_dra(k8s, node, driver), before):
        not_run(
            f"the kubelet on {node} had unprepared the claim before it was gone from the API "
            "(the force-deleted pod stopped before the claim controller freed its claim)",
            "run the requirement again",
        )

    def failed(now: KubeletDra) -> str | None:
        failures = describe_failures(now.since(before))
        if not failures:
            return None
        return (
            f"the kubelet on node {node} cannot unprepare the force-deleted pod's claim "
            f"{workload.ref('doomed')} now that the claim is gone from the API ({failures}): "
            f"{driver} does not unprepare from its own state, and the kubelet retries for ever"
        )

    waits.wait_until(
        lambda: read_kubelet_dra(k8s, node, driver),
        lambda now: not _still_prepared(now, before),
        describe=f"the kubelet on {node} to unprepare the deleted claim "
        f"({CLAIMS_IN_USE} back to {before.claims_in_use:g})",
        timeout=workload.timeout("podDeleted"),
        interval=0.5,
        show=lambda now: {"claims in use": now.claims_in_use, "failures": failed(now)},
        abort=failed,
    )
    record_metric(request, "claim_deleted_to_unprepared", time.monotonic() - deleted, node=node)
    assert failed(read_kubelet_dra(k8s, node, driver)) is None


def _still_prepared(now: KubeletDra, before: KubeletDra) -> bool:
    return (now.claims_in_use or 0) > (before.claims_in_use or 0)
