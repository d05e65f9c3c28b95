"""Broken-driver checks for the MUST requirements of the allocation suite (see
test_broken_core.py for how they run).

Allocation is the scheduler's work; a driver breaks these requirements through what it
publishes (attributes, capacities, devices it does not have) and through what it hands the
containers (CDI edits), both of which the scenarios check.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def test_alloc_001_fails_when_the_selected_attribute_is_wrong(run_scenario_against_broken_driver):
    # The profile's selector compares the model; published wrong, no device matches it.
    result = run_scenario_against_broken_driver("DRA-ALLOC-001", ["wrong-attribute"])
    result.assert_requirement_failed("selector:kind-a")


def test_alloc_002_fails_when_the_capacity_is_not_published(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-ALLOC-002", ["missing-capacity"])
    result.assert_requirement_failed("has capacity")


def test_alloc_003_fails_when_a_kind_attribute_is_missing(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-ALLOC-003", ["missing-attribute"])
    result.assert_requirement_failed("selector:kind-")


def test_alloc_004_fails_when_the_container_sees_one_of_two_devices(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-ALLOC-004", ["cdi-first-device-only"])
    result.assert_requirement_failed("missing:")


def test_alloc_008_fails_when_the_freed_pool_holds_a_phantom_device(
    run_scenario_against_broken_driver,
):
    # The waiter gets every device of its node, including one the driver cannot prepare.
    result = run_scenario_against_broken_driver("DRA-ALLOC-008", ["phantom-device"])
    result.assert_requirement_failed("FailedPrepareDynamicResources")


def test_alloc_009_fails_when_generated_claims_get_the_wrong_device(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-ALLOC-009", ["cdi-wrong-device"])
    result.assert_requirement_failed("should see exactly")


def test_alloc_010_fails_when_the_shared_device_is_not_the_allocated_one(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-ALLOC-010", ["cdi-wrong-device"])
    result.assert_requirement_failed("should see exactly")


def test_alloc_011_fails_when_a_published_device_does_not_exist(
    run_scenario_against_broken_driver,
):
    # D counts the phantom: one of the D allocated pods can never be prepared.
    result = run_scenario_against_broken_driver("DRA-ALLOC-011", ["phantom-device"])
    result.assert_requirement_failed("to run and one to stay unschedulable")


def test_alloc_017_fails_when_the_driver_cannot_share_a_shareable_device(
    run_scenario_against_broken_driver,
):
    # A MAY: the device is published with allowMultipleAllocations and the scheduler shares
    # it, but the driver prepares one share at a time, so the second pod never starts.
    result = run_scenario_against_broken_driver("DRA-ALLOC-017", ["exclusive-shared-devices"])
    result.assert_requirement_failed("FailedPrepareDynamicResources")
    assert "fs32-0 is still prepared for claim" in result.output, result.explain()


@pytest.mark.parametrize(
    "requirement",
    # selectors, capacity, matchAttribute; the capacity one in CI (the CI budget)
    [
        pytest.param("DRA-ALLOC-001", marks=pytest.mark.e2e_by_hand),
        "DRA-ALLOC-002",
        pytest.param("DRA-ALLOC-006", marks=pytest.mark.e2e_by_hand),
    ],
)
def test_allocation_passes_with_unqualified_names(
    run_scenario_against_broken_driver, requirement: str
):
    # Legal: the selectors, the capacity comparison and the matchAttribute constraint the suite
    # builds from the profile name <driver>/<name>, which the API resolves to the unqualified
    # names this driver publishes.
    result = run_scenario_against_broken_driver(requirement, ["unqualified-attribute"])
    assert result.requirement_status == "passed" and not result.failed, result.explain()


# SHOULD, checked all the same: partitions that consume no shared counter are allocated
# beside the whole device, which already holds all of them.
def test_alloc_016_fails_when_partitions_consume_no_shared_counters(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-ALLOC-016", ["partitions-without-counters"])
    result.assert_requirement_failed("do not draw on the same shared counters")
