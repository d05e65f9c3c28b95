"""DRA-EXT-001, -002, -005: extended-resource requests served by DRA through the claim the
scheduler creates for the pod."""

from __future__ import annotations

import pytest
from extended_checks import IMPLICIT_PREFIX, extended_pod, special_claim

from conformance.scenario_api.workloads import Workloads


def _run_and_check(workload: Workloads, resource: str, device_class: str, quantity: int) -> None:
    extended_pod(workload, "user", resource, quantity)
    pod = workload.wait_running("user")
    _, results = special_claim(workload, pod, resource, device_class, quantity)
    workload.assert_sees_exactly("user", results)


@pytest.mark.dra_requirement("DRA-EXT-001")
@pytest.mark.dra_devices("extended-resource")
def test_extended_resource_request_runs_with_driver_device(workload: Workloads) -> None:
    extended = workload.profile.extended_resource
    _run_and_check(workload, extended.name, extended.device_class, 1)


@pytest.mark.dra_requirement("DRA-EXT-002")
@pytest.mark.dra_devices("extended-resource", count=2)
def test_extended_resource_request_for_two_gets_two_devices(workload: Workloads) -> None:
    extended = workload.profile.extended_resource
    _run_and_check(workload, extended.name, extended.device_class, 2)


@pytest.mark.dra_requirement("DRA-EXT-005")
@pytest.mark.dra_devices("default")
def test_implicit_device_class_resource_name(workload: Workloads) -> None:
    device_class = workload.profile.default_class
    _run_and_check(workload, IMPLICIT_PREFIX + device_class, device_class, 1)
