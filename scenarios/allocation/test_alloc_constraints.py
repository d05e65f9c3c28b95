"""DRA-ALLOC-006 (matchAttribute across two requests) and DRA-ALLOC-007 (prioritized list:
the second subrequest is used when the first cannot be satisfied)."""

from __future__ import annotations

import pytest

from conformance.kube.claim_requests import first_available, match_attribute, subrequest
from conformance.model.outcome import not_run
from conformance.scenario_api.kind_check import allocated_device
from conformance.scenario_api.workloads import Workloads


@pytest.mark.dra_requirement("DRA-ALLOC-006")
@pytest.mark.dra_devices("default", count=2)
def test_match_attribute_yields_devices_with_the_same_value(workload: Workloads) -> None:
    attributes = workload.profile.match_attributes
    if not attributes:  # nothing to constrain on: the suite cannot test it
        not_run(
            "the profile lists no matchAttributes to constrain on",
            "list an attribute the driver publishes in `matchAttributes` (docs/profile.md)",
        )
    # Every attribute the profile offers, one after the other (each claim released before
    # the next, so the test never holds more than its two devices).
    for index, attribute in enumerate(attributes):
        name = f"match-{index}"
        workload.claim(
            name,
            [workload.device_request(name="one"), workload.device_request(name="two")],
            constraints=[match_attribute(attribute, ["one", "two"])],
        )
        workload.run(name, [name], abort_on_prepare_failure=True)
        results = workload.results(name)
        assert sorted(r.request for r in results) == ["one", "two"], results
        assert len({r.device_id for r in results}) == 2, f"one device twice: {results}"
        devices = workload.devices_allocated_against()
        driver = workload.profile.driver
        values = {
            r.device_id: allocated_device(r.device_id, devices, driver).attributes.get(attribute)
            for r in results
        }
        assert None not in values.values() and len(set(values.values())) == 1, (
            f"matchAttribute {attribute}: the allocated devices publish {values}"
        )
        workload.assert_sees_exactly(name, results)
        workload.delete_pod(name)
        workload.wait_deallocated(name)


@pytest.mark.dra_requirement("DRA-ALLOC-007")
@pytest.mark.dra_devices("default")
def test_first_available_falls_back_to_the_second_subrequest(workload: Workloads) -> None:
    context = workload.context
    per_node = [len(d) for n, d in context.devices_by_node().items() if n is not None]
    network_attached = len(context.devices_by_node().get(None, ()))
    # More devices than any node can offer: the first subrequest can never be satisfied.
    impossible = max(per_node, default=0) + network_attached + 1
    default_class = workload.profile.default_class
    workload.claim(
        "claim",
        [
            first_available(
                "dev",
                [
                    subrequest("too-many", default_class, count=impossible),
                    subrequest("one", default_class),
                ],
            )
        ],
    )
    workload.run("pod", ["claim"], abort_on_prepare_failure=True)
    results = workload.results("claim")
    assert [r.request for r in results] == ["dev/one"], (
        f"expected one result for request dev/one (the first subrequest asks for "
        f"{impossible} devices), got {results}"
    )
    workload.assert_sees_exactly("pod", results)
