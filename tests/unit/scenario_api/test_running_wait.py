"""What ends a wait for a pod to run at once (conformance.scenario_api.running_wait), over plain
pod, event, claim and slice dicts as the API server serves them."""

from __future__ import annotations

from typing import Any

from helpers.dra_objects import resource_slice

from conformance.scenario_api.running_wait import (
    PREPARE_FAILED,
    PoolRef,
    PoolWatch,
    claim_pools,
    hopeless_reason,
    missing_pools,
    pod_claim_names,
    prepare_failures,
    published_pools,
)

D = "gpu.example.com"


def pod(phase: str = "Pending", uid: str = "u1") -> dict[str, Any]:
    return {"metadata": {"name": "p", "uid": uid}, "status": {"phase": phase}}


def event(reason: str, uid: str | None = "u1", kind: str = "Warning", message: str = "m"):
    involved = {"kind": "Pod", "name": "p", **({"uid": uid} if uid else {})}
    return {"type": kind, "reason": reason, "message": message, "involvedObject": involved}


def claim(*pools: str, driver: str = D) -> dict[str, Any]:
    results = [
        {"request": "dev", "driver": driver, "pool": pool, "device": f"d{i}"}
        for i, pool in enumerate(pools)
    ]
    allocation = {"devices": {"results": results}} if pools else None
    return {"metadata": {"name": "c"}, "status": {"allocation": allocation}}


def test_prepare_failures_are_warning_events_of_this_pod() -> None:
    events = [
        event(PREPARE_FAILED, message="Failed to prepare dynamic resources: boom"),
        event(PREPARE_FAILED, uid="old-pod-of-the-same-name"),
        event(PREPARE_FAILED, kind="Normal"),
        event("FailedScheduling"),
        event(PREPARE_FAILED, uid=None, message="no uid: counted"),
    ]
    found = prepare_failures(events, "u1")
    assert [e["message"] for e in found] == [
        "Failed to prepare dynamic resources: boom",
        "no uid: counted",
    ]


def test_a_prepare_failure_ends_the_wait_with_the_kubelets_message() -> None:
    failures = [
        event(PREPARE_FAILED, message="Failed to prepare dynamic resources: first"),
        event(PREPARE_FAILED, message="Failed to prepare dynamic resources: last"),
    ]
    reason = hopeless_reason(pod(), failures)
    assert reason == (
        "the kubelet could not prepare the pod's claims (FailedPrepareDynamicResources): "
        "Failed to prepare dynamic resources: last"
    )


def test_a_finished_pod_ends_the_wait_and_a_pending_one_does_not() -> None:
    assert hopeless_reason(pod("Failed")) == "the pod reached phase Failed"
    assert hopeless_reason(pod("Succeeded")) == "the pod reached phase Succeeded"
    assert hopeless_reason(pod("Pending")) is None
    assert hopeless_reason(None) is None
    assert hopeless_reason(pod(), (), "pool gone") == "pool gone"


def test_pod_claim_names_resolve_generated_claims() -> None:
    p = {
        "spec": {
            "resourceClaims": [
                {"name": "a", "resourceClaimName": "claim-a"},
                {"name": "t", "resourceClaimTemplateName": "tmpl"},
                {"name": "u", "resourceClaimTemplateName": "tmpl"},
            ]
        },
        "status": {"resourceClaimStatuses": [{"name": "t", "resourceClaimName": "p-t-x1"}]},
    }
    assert pod_claim_names(p) == {"a": "claim-a", "t": "p-t-x1"}


def test_claim_pools_and_published_pools() -> None:
    pools = claim_pools({"a": claim("node-1", "node-1"), "b": claim(), "gone": None})
    assert pools == {"a": {PoolRef(D, "node-1")}}
    slices = [resource_slice("s1", D, "node-1", []), resource_slice("s2", "other.io", "n", [])]
    assert published_pools(slices) == {PoolRef(D, "node-1"), PoolRef("other.io", "n")}
    assert missing_pools(
        {"a": {PoolRef(D, "node-2")}, "b": {PoolRef(D, "node-1")}}, {PoolRef(D, "node-1")}
    ) == {PoolRef(D, "node-2"): ["a"]}


def test_a_pool_is_given_up_only_when_missing_on_two_reads_in_a_row() -> None:
    watch = PoolWatch()
    allocated = {"a": {PoolRef(D, "node-1")}, "b": {PoolRef(D, "node-1")}}
    assert watch.observe(allocated, set()) is None  # maybe between delete and create
    assert watch.observe(allocated, {PoolRef(D, "node-1")}) is None  # back
    assert watch.observe(allocated, set()) is None
    assert watch.observe(allocated, set()) == (
        "claims a, b are allocated from pool node-1 of driver gpu.example.com, which no "
        "ResourceSlice publishes any more"
    )
