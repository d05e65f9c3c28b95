"""Checks shared by the DRA-DEL scenarios (imported by the suite's test modules)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.kube import state
from conformance.kube.client import K8sClients
from conformance.kube.kubelet import kubelet_metrics
from conformance.kube.state import AllocationResult
from conformance.metrics.calls import dra_grpc_calls
from conformance.scenario_api.workloads import Workloads

DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


def not_scheduled(pod: Mapping[str, Any] | None) -> bool:
    """Still waiting: exists, no spec.nodeName, and no PodScheduled=True condition."""
    if pod is None or (pod.get("spec") or {}).get("nodeName"):
        return False
    condition = state.pod_condition(pod, "PodScheduled")
    return not condition or condition.get("status") != "True"


def running_ready(pod: Mapping[str, Any] | None) -> bool:
    statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or ()
    return (
        state.pod_phase(pod) == "Running"
        and bool(statuses)
        and all(s.get("ready") for s in statuses)
        and not ((pod or {}).get("metadata") or {}).get("deletionTimestamp")
    )


def restart_counts(pod: Mapping[str, Any]) -> dict[str, int]:
    return {
        s["name"]: int(s.get("restartCount") or 0)
        for s in (pod.get("status") or {}).get("containerStatuses") or ()
    }


def single_result(workload: Workloads, claim_name: str) -> AllocationResult:
    """The one allocation result of a one-device claim, checked to come from the driver."""
    results = workload.results(claim_name)
    assert len(results) == 1, (
        f"claim {workload.namespace}/{claim_name} asks for one device and should have exactly "
        f"one allocation result, has {results}"
    )
    result = results[0]
    assert result.driver == workload.profile.driver, (
        f"claim {claim_name} was allocated a device of {result.driver}, "
        f"expected {workload.profile.driver}"
    )
    return result


def assert_reserved_for(claim: Mapping[str, Any], *pods: Mapping[str, Any]) -> None:
    """status.reservedFor names exactly these pods (resource `pods`, name and uid)."""
    got = sorted((r.resource, r.name, r.uid) for r in state.reserved_for(claim))
    want = sorted(("pods", p["metadata"]["name"], p["metadata"]["uid"]) for p in pods)
    assert got == want, (
        f"claim {claim['metadata']['name']} status.reservedFor should be {want}, is {got}"
    )


def uid(obj: Mapping[str, Any] | None) -> str:
    return ((obj or {}).get("metadata") or {}).get("uid", "")


def kubelet_unprepare_calls(k8s: K8sClients, node: str, driver: str) -> int:
    """Successful NodeUnprepareResources calls the kubelet of `node` made to `driver`."""
    return dra_grpc_calls(kubelet_metrics(k8s, node), driver, "NodeUnprepareResources")
