"""DRA-ALLOC-001 (a CEL selector allocates only matching devices, on a node that has them)
and DRA-ALLOC-003 (heterogeneity: two kinds, two different devices of their own kinds)."""

from __future__ import annotations

import pytest

from conformance.kube import state
from conformance.kube.client import K8sClients
from conformance.model.node_selection import node_matches
from conformance.scenario_api.kind_check import allocated_device
from conformance.scenario_api.workloads import Workloads, selector_verdict

KIND_A, KIND_B = "selector:kind-a", "selector:kind-b"


@pytest.mark.dra_requirement("DRA-ALLOC-001")
@pytest.mark.dra_devices(KIND_A)
def test_selector_allocates_only_a_matching_device(workload: Workloads, k8s: K8sClients) -> None:
    workload.claim("claim", kind=KIND_A)
    pod = workload.run("pod", ["claim"], abort_on_prepare_failure=True)
    claim = workload.read_claim("claim") or {}
    results = state.allocation_results(claim)
    assert len(results) == 1, f"expected one allocation result, got {results}"
    workload.assert_of_kind(KIND_A, results)

    node_name = pod["spec"]["nodeName"]
    node = k8s.to_dict(k8s.core.read_node(node_name))
    allocation = claim["status"]["allocation"]
    assert node_matches(allocation.get("nodeSelector"), node), (
        f"pod runs on {node_name}, which status.allocation.nodeSelector does not allow: "
        f"{allocation.get('nodeSelector')}"
    )
    devices = workload.devices_allocated_against()
    device = allocated_device(results[0].device_id, devices, workload.profile.driver)
    assert device.node in (None, node_name), (
        f"device {device.id} is published for node {device.node}, the pod runs on {node_name}"
    )
    workload.assert_sees_exactly("pod", results)


@pytest.mark.dra_requirement("DRA-ALLOC-003")
@pytest.mark.dra_devices(KIND_A)
@pytest.mark.dra_devices(KIND_B)
def test_two_kinds_get_two_different_devices_of_their_kinds(workload: Workloads) -> None:
    profile = workload.profile
    for kind, name in ((KIND_A, "a"), (KIND_B, "b")):
        workload.claim(name, kind=kind)
        workload.pod(name, [name])
    for name in ("a", "b"):
        workload.wait_running(name, abort_on_prepare_failure=True)
    (got_a,) = workload.results("a")
    (got_b,) = workload.results("b")
    assert got_a.device_id != got_b.device_id, f"both kinds got {got_a.device_id}"
    workload.assert_of_kind(KIND_A, [got_a])
    workload.assert_of_kind(KIND_B, [got_b])
    devices = workload.devices_allocated_against()
    for result, other in ((got_a, KIND_B), (got_b, KIND_A)):
        _, expression = profile.kind_class_and_expression(other)
        device = allocated_device(result.device_id, devices, profile.driver)
        assert selector_verdict(expression, device, profile.driver) is not True, (
            f"device {result.device_id} also matches the other kind's selector {expression!r}: "
            "the profile's kinds must be disjoint"
        )
    workload.assert_sees_exactly("a", [got_a])
    workload.assert_sees_exactly("b", [got_b])
