"""Broken-driver checks for the MUST requirements of the core suite: each requirement's
scenario must FAIL against a fake driver that breaks it (the fixture switches the
misbehaviour on, runs the scenario in a subprocess on the same cluster, switches it off)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def assert_fails(run, must_mention: str | None = None) -> None:
    """The requirement failed in the summary and in at least one of its tests."""
    assert run.outcomes, f"no scenario test ran:\n{run.explain()}"
    assert run.failed, f"the broken driver passed:\n{run.explain()}"
    assert run.requirement_status == "failed", run.explain()
    if must_mention:
        assert must_mention in run.output, f"no mention of {must_mention!r}:\n{run.explain()}"


def test_core_001_fails_when_the_plugin_is_not_registered(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-CORE-001", ["unregistered"])
    assert_fails(result, "is not registered")


@pytest.mark.parametrize(
    ("misbehaviour", "message"),
    [
        ("duplicate-device-names", "published more than once"),
        ("inconsistent-pool", "resourceSliceCount is"),
        ("unqualified-attribute", "not fully qualified"),
    ],
)
def test_core_002_fails_on_inconsistent_or_unqualified_slices(
    run_scenario_against_broken_driver, misbehaviour: str, message: str
):
    result = run_scenario_against_broken_driver("DRA-CORE-002", [misbehaviour])
    assert_fails(result, message)


def test_core_003_fails_when_the_pool_is_incomplete(run_scenario_against_broken_driver):
    # The scheduler allocates nothing from a pool whose resourceSliceCount is never reached.
    result = run_scenario_against_broken_driver("DRA-CORE-003", ["inconsistent-pool"])
    assert_fails(result, "to be allocated and reserved")


@pytest.mark.parametrize(
    ("misbehaviour", "message"),
    [
        ("cdi-wrong-device", "should see exactly"),
        ("skip-claim-in-prepare", "FailedPrepareDynamicResources"),
    ],
)
def test_core_004_fails_when_the_container_does_not_get_its_device(
    run_scenario_against_broken_driver, misbehaviour: str, message: str
):
    result = run_scenario_against_broken_driver("DRA-CORE-004", [misbehaviour])
    assert_fails(result, message)


def test_core_005_fails_when_unprepare_keeps_the_old_preparation(
    run_scenario_against_broken_driver,
):
    # The released claim, allocated another device, is answered from the stale checkpoint.
    result = run_scenario_against_broken_driver("DRA-CORE-005", ["noop-unprepare"])
    assert_fails(result, "should see exactly")


def test_core_006_fails_when_the_cdi_spec_changes_under_a_running_claim(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-CORE-006", ["unstable-cdi-spec"])
    assert_fails(result, "sees")
