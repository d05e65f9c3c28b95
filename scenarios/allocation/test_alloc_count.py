"""DRA-ALLOC-004 (count N: N distinct devices, all visible) and DRA-ALLOC-005
(allocationMode All: every matching device of the chosen node)."""

from __future__ import annotations

import pytest

from conformance.scenario_api.workloads import Workloads, selector_verdict

COUNT = 2
KIND_B = "selector:kind-b"


@pytest.mark.dra_requirement("DRA-ALLOC-004")
@pytest.mark.dra_devices("default", count=COUNT)
def test_count_allocates_distinct_devices_all_visible(workload: Workloads) -> None:
    workload.claim("claim", [workload.device_request(count=COUNT)])
    workload.run("pod", ["claim"], abort_on_prepare_failure=True)
    results = workload.results("claim")
    assert len(results) == COUNT, f"count {COUNT}: got {len(results)} results {results}"
    assert len({r.device_id for r in results}) == COUNT, f"devices repeat: {results}"
    assert all(r.request == "dev" and r.driver == workload.profile.driver for r in results)
    workload.assert_sees_exactly("pod", results)


@pytest.mark.dra_requirement("DRA-ALLOC-005")
@pytest.mark.dra_devices(KIND_B, count="all")
def test_all_mode_allocates_every_matching_device_of_the_node(workload: Workloads) -> None:
    profile = workload.profile
    workload.claim("claim", [workload.device_request(KIND_B, all_devices=True)])
    pod = workload.run("pod", ["claim"], abort_on_prepare_failure=True)
    node = pod["spec"]["nodeName"]
    _, expression = profile.kind_class_and_expression(KIND_B)
    results = workload.results("claim")
    # Published now or, for a device withdrawn while allocated, at the run's start.
    devices = workload.devices_allocated_against(results)
    expected = {
        i
        for i, d in devices.items()
        if d.node == node and selector_verdict(expression, d, profile.driver)
    }
    assert {r.device_id for r in results} == expected, (
        f"allocationMode All on {node}: allocated {sorted(r.device_id for r in results)}, "
        f"the node publishes these matching devices: {sorted(expected)}"
    )
    assert len(results) == len(expected), f"a device appears twice: {results}"
    workload.assert_sees_exactly("pod", results)
