"""Broken-driver checks for the MUST requirements of the core suite: each requirement's
scenario must FAIL against a fake driver that breaks it (the fixture switches the
misbehaviour on, runs the scenario in a subprocess on the same cluster, switches it off)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

BROKEN_POD_RUNNING_S = 40  # conftest.BROKEN_RUN_TIMEOUTS["podRunning"]

pytestmark = pytest.mark.e2e


def test_core_001_fails_when_the_plugin_is_not_registered(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-CORE-001", ["unregistered"])
    result.assert_requirement_failed("is not registered")


@pytest.mark.parametrize(
    ("misbehaviour", "message"),
    [
        # one misbehaviour in CI; the other two by hand (the CI budget)
        pytest.param(
            "duplicate-device-names", "published more than once", marks=pytest.mark.e2e_by_hand
        ),
        ("inconsistent-pool", "resourceSliceCount is"),
        pytest.param("multi-slash-attribute", "more than one '/'", marks=pytest.mark.e2e_by_hand),
    ],
)
def test_core_002_fails_on_inconsistent_pools_or_invalid_names(
    run_scenario_against_broken_driver, misbehaviour: str, message: str
):
    result = run_scenario_against_broken_driver("DRA-CORE-002", [misbehaviour])
    result.assert_requirement_failed(message)
    if misbehaviour != "inconsistent-pool":  # the published content decides: no waiting
        assert "stopped waiting" in result.output and "timed out" not in result.output, (
            result.explain()
        )


@pytest.mark.e2e_by_hand
def test_core_002_passes_with_unqualified_names(run_scenario_against_broken_driver):
    # Legal: resource.k8s.io/v1 takes unqualified attribute and capacity names to be in the
    # driver's domain.
    result = run_scenario_against_broken_driver("DRA-CORE-002", ["unqualified-attribute"])
    assert result.requirement_status == "passed" and not result.failed, result.explain()


def test_core_003_fails_when_the_pool_is_incomplete(run_scenario_against_broken_driver):
    # The scheduler allocates nothing from a pool whose resourceSliceCount is never reached.
    result = run_scenario_against_broken_driver("DRA-CORE-003", ["inconsistent-pool"])
    result.assert_requirement_failed("to be allocated and reserved")


@pytest.mark.parametrize(
    ("misbehaviour", "message"),
    [
        ("cdi-wrong-device", "should see exactly"),
        pytest.param(
            "skip-claim-in-prepare", "FailedPrepareDynamicResources", marks=pytest.mark.e2e_by_hand
        ),
    ],
)
def test_core_004_fails_when_the_container_does_not_get_its_device(
    run_scenario_against_broken_driver, misbehaviour: str, message: str
):
    result = run_scenario_against_broken_driver("DRA-CORE-004", [misbehaviour])
    result.assert_requirement_failed(message)


def test_core_005_fails_when_unprepare_keeps_the_old_preparation(
    run_scenario_against_broken_driver,
):
    # The device stays prepared for the deleted pod's claim, so the driver never prepares it
    # for the claim waiting for it.
    result = run_scenario_against_broken_driver("DRA-CORE-005", ["noop-unprepare"])
    result.assert_requirement_failed("is still prepared for claim")


def test_core_006_fails_when_the_cdi_spec_changes_under_a_running_claim(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-CORE-006", ["unstable-cdi-spec"])
    result.assert_requirement_failed("sees")


def test_core_007_fails_when_only_the_first_claim_gets_its_device(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-CORE-007", ["first-claim-only"])
    # The reason names the device of claim second that no container got.
    result.assert_requirement_failed("missing: [")
    assert "should see exactly" in result.output, result.explain()


def test_core_008_fails_when_unprepare_leaves_the_cdi_spec(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-CORE-008", ["leak-cdi-spec"])
    result.assert_requirement_failed("are still there: /var/run/cdi/")


@pytest.mark.e2e_by_hand
def test_core_008_finds_specs_named_by_device(run_scenario_against_broken_driver):
    """Nothing in the specs names the claim: the CDI device ids the kubelet got lead to them.
    The spec is checked (passed) when unprepare removes it and fails when it stays."""
    named_by_device = run_scenario_against_broken_driver("DRA-CORE-008", ["cdi-specs-by-device"])
    assert named_by_device.requirement_status == "passed", named_by_device.explain()
    result = run_scenario_against_broken_driver(
        "DRA-CORE-008", ["cdi-specs-by-device", "leak-cdi-spec"]
    )
    result.assert_requirement_failed("(defines fake.dra-conformance.io/device=")


def test_a_prepare_failure_ends_the_wait_for_running_at_once(
    run_scenario_against_broken_driver, tmp_path: Path
):
    # DRA-CORE-007 waits with the default: the kubelet retries the failed prepare until the
    # wait times out (podRunning: 40 s in broken runs, 120 s by default), unless the
    # FailedPrepareDynamicResources event ends the wait at once.
    result = run_scenario_against_broken_driver("DRA-CORE-007", ["skip-claim-in-prepare"])
    result.assert_requirement_failed("stopped waiting for pod")
    assert "could not prepare the pod's claims" in result.output, result.explain()
    assert "timed out" not in result.output, result.explain()
    junit = ET.parse(tmp_path / "run-1" / "report" / "junit.xml").getroot()
    seconds = [float(case.get("time") or 0) for case in junit.iter("testcase")]
    assert seconds and max(seconds) < BROKEN_POD_RUNNING_S / 2, (
        f"test times {seconds} s: the wait did not end at the prepare failure"
    )
