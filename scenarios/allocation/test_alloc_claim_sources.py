"""DRA-ALLOC-009 (a ResourceClaimTemplate yields one claim per pod, owned by it) and
DRA-ALLOC-010 (one claim shared by two pods)."""

from __future__ import annotations

import pytest

from conformance.kube import state
from conformance.kube.builders import PodClaim
from conformance.kube.client import K8sClients
from conformance.kube.state import ConsumerRef
from conformance.scenario_api.workloads import Workloads

POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"


@pytest.mark.dra_requirement("DRA-ALLOC-009")
@pytest.mark.dra_devices("default", count=2)
def test_template_yields_one_claim_per_pod_owned_by_it(
    workload: Workloads, k8s: K8sClients
) -> None:
    workload.template("template")
    pods = {}
    for name in ("a", "b"):
        workload.pod(name, [PodClaim("device", template="template")])
    for name in ("a", "b"):
        pods[name] = workload.wait_running(name, abort_on_prepare_failure=True)

    claims = {
        c["metadata"]["name"]: c
        for c in (
            k8s.to_dict(x)
            for x in k8s.resource.list_namespaced_resource_claim(workload.namespace).items
        )
    }
    assert len(claims) == 2, f"two pods, one template: expected 2 claims, got {sorted(claims)}"
    for name, pod in pods.items():
        statuses = pod["status"].get("resourceClaimStatuses") or []
        assert [s["name"] for s in statuses] == ["device"], statuses
        generated = statuses[0].get("resourceClaimName")
        assert generated in claims, f"pod {name} records {generated!r}, claims: {sorted(claims)}"
        claim = claims[generated]
        meta = claim["metadata"]
        owners = [
            {k: o.get(k) for k in ("apiVersion", "kind", "name", "uid", "controller")}
            for o in meta.get("ownerReferences") or []
        ]
        assert owners == [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": name,
                "uid": pod["metadata"]["uid"],
                "controller": True,
            }
        ], f"claim {generated} should be owned (controller) by pod {name}: {owners}"
        annotations = meta.get("annotations") or {}
        assert annotations.get(POD_CLAIM_NAME) == "device", annotations
        assert state.reserved_for(claim) == [
            ConsumerRef("pods", name, pod["metadata"]["uid"], "")
        ], state.claim_summary(claim)
        results = state.allocation_results(claim)
        assert len(results) == 1, results
        workload.assert_sees_exactly(name, results)
    assert (
        len({s["status"]["resourceClaimStatuses"][0]["resourceClaimName"] for s in pods.values()})
        == 2
    )


@pytest.mark.dra_requirement("DRA-ALLOC-010")
@pytest.mark.dra_devices("default")
def test_one_claim_shared_by_two_pods(workload: Workloads) -> None:
    workload.claim("shared")
    for name in ("a", "b"):
        workload.pod(name, ["shared"])
    pods = {n: workload.wait_running(n, abort_on_prepare_failure=True) for n in ("a", "b")}
    nodes = {n: p["spec"]["nodeName"] for n, p in pods.items()}
    assert nodes["a"] == nodes["b"], f"pods sharing a claim run on different nodes: {nodes}"
    claim = workload.read_claim("shared") or {}
    results = state.allocation_results(claim)
    assert len(results) == 1, results
    reserved = state.reserved_for(claim)
    assert sorted(reserved, key=lambda r: r.name) == [
        ConsumerRef("pods", n, pods[n]["metadata"]["uid"], "") for n in ("a", "b")
    ], f"status.reservedFor should list both pods: {reserved}"
    for name in ("a", "b"):
        workload.assert_sees_exactly(name, results)
