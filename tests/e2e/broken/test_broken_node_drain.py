"""Broken-driver checks for the MUST requirements of the node_drain suite (see
test_broken_device_loss.py for how they run).

Cordon and uncordon are enforced by the scheduler; a driver breaks DRA-DRAIN-001/004 through
what it does for the pods that must run (prepare, CDI edits), which the scenarios check.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def failed_tests(result) -> list[str]:
    return [n for n, outcome in result.outcomes.items() if outcome in ("failed", "error")]


def test_drain_001_fails_when_pods_off_the_cordoned_node_see_another_device(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-DRAIN-001", ["cdi-wrong-device"])
    assert failed_tests(result), result.output
    assert "should see exactly" in result.output, result.output


def test_drain_002_fails_when_the_driver_cannot_unprepare(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-DRAIN-002", ["fail-unprepare"])
    assert failed_tests(result), result.output
    assert "FailedUnprepareDynamicResources" in result.output, result.output


def test_drain_004_fails_when_the_uncordoned_nodes_pod_cannot_be_prepared(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-DRAIN-004", ["skip-claim-in-prepare"])
    assert failed_tests(result), result.output
