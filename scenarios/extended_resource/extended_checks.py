"""Pods that ask for an extended resource, and the checks of the claim the scheduler makes
for them (KEP-5004; field names as in v1.37.2 core/v1 and resource.k8s.io/v1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deviceplugin_checks import DevicePlugin

from conformance.kube import state
from conformance.kube.builders import container
from conformance.kube.state import AllocationResult
from conformance.scenario_api.workloads import MAIN, Workloads

EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
PLUGIN_DEVICES = ("dp-0",)  # what the DRA-EXT-006 device plugin advertises


def extended_pod(
    workload: Workloads, name: str, resource: str, quantity: int, *, node: str | None = None
) -> dict[str, Any]:
    """A workload pod whose container `main` has `resource: quantity` in resources.limits
    (extended resources: requests default to the limits and must equal them)."""
    return workload.pod(name, containers=[container(MAIN, limits={resource: quantity})], node=node)


def _uid(obj: Mapping[str, Any]) -> str:
    return obj["metadata"]["uid"]


def special_claim(
    workload: Workloads, pod: Mapping[str, Any], resource: str, device_class: str, quantity: int
) -> tuple[dict[str, Any], list[AllocationResult]]:
    """Check the claim the scheduler created for `pod` and return it with its results:
    recorded in pod.status.extendedResourceClaimStatus (claim name, one mapping of container
    `main` and `resource` to a request), owned by the pod, annotated, asking for `quantity`
    devices of `device_class`, allocated that many distinct devices of the driver and
    reserved for the pod."""
    name = pod["metadata"]["name"]
    status = (pod.get("status") or {}).get("extendedResourceClaimStatus")
    assert status and status.get("resourceClaimName"), (
        f"pod {name} requests {resource} but has no status.extendedResourceClaimStatus "
        f"(status: {state.pod_summary(pod)})"
    )
    claim_name = status["resourceClaimName"]
    claim = workload.read_claim(claim_name)
    assert claim is not None, f"extendedResourceClaimStatus names claim {claim_name}, not found"
    meta = claim["metadata"]
    assert claim_name.startswith(f"{name}-extended-resources-"), (
        f"special claim {claim_name} should be generated from '{name}-extended-resources-'"
    )
    annotations = meta.get("annotations") or {}
    assert annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true", (
        f'claim {claim_name} lacks annotation {EXTENDED_RESOURCE_CLAIM_ANNOTATION}: "true" '
        f"(annotations: {annotations})"
    )
    owners = [
        (o.get("apiVersion"), o.get("kind"), o.get("name"), o.get("uid"), o.get("controller"))
        for o in meta.get("ownerReferences") or ()
    ]
    assert owners == [("v1", "Pod", name, _uid(pod), True)], (
        f"claim {claim_name} should be controlled by pod {name}, "
        f"ownerReferences: {meta.get('ownerReferences')}"
    )

    requests = (claim.get("spec") or {}).get("devices", {}).get("requests") or []
    assert len(requests) == 1, f"claim {claim_name} should have one request, has {requests}"
    request_name = requests[0]["name"]
    exactly = requests[0].get("exactly") or {}
    assert (
        exactly.get("deviceClassName"),
        exactly.get("allocationMode"),
        exactly.get("count"),
    ) == (device_class, "ExactCount", quantity), (
        f"claim {claim_name} request should ask for ExactCount {quantity} of {device_class}, "
        f"is {requests[0]}"
    )
    mappings = [
        (m.get("containerName"), m.get("resourceName"), m.get("requestName"))
        for m in status.get("requestMappings") or ()
    ]
    assert mappings == [(MAIN, resource, request_name)], (
        f"extendedResourceClaimStatus.requestMappings should map container {MAIN} and "
        f"{resource} to request {request_name}, is {status.get('requestMappings')}"
    )

    results = state.allocation_results(claim)
    driver = workload.profile.driver
    ids = [r.device_id for r in results]
    assert len(results) == quantity and len(set(ids)) == quantity, (
        f"claim {claim_name} should be allocated {quantity} distinct device(s), got {ids}"
    )
    for r in results:
        assert (r.driver, r.request) == (driver, request_name), (
            f"claim {claim_name}: result {r} should be from {driver} for request {request_name}"
        )
        assert workload.context.device(r.device_id) is not None, (
            f"claim {claim_name} was allocated {r.device_id}, which no published slice offers"
        )
    reserved = [(c.resource, c.name, c.uid) for c in state.reserved_for(claim)]
    assert reserved == [("pods", name, _uid(pod))], (
        f"claim {claim_name} status.reservedFor should be pod {name}, is {reserved}"
    )
    return claim, results


def devices_per_node(workload: Workloads, kind: str) -> dict[str, list[str]]:
    """Node -> ids of the devices of `kind` published there (node-local devices only)."""
    devices = workload.context.devices_of_kind(kind)
    out: dict[str, list[str]] = {}
    for d in devices:
        if d.node:
            out.setdefault(d.node, []).append(d.id)
    return out


@dataclass(frozen=True)
class PluginNode:
    node: str
    plugin: DevicePlugin
    dra_devices: tuple[str, ...]  # the node's DRA devices of the extended-resource class
