"""Broken-driver checks for the MUST requirements of the node_drain suite (see
test_broken_device_loss.py for how they run).

Cordon and uncordon are enforced by the scheduler; a driver breaks DRA-DRAIN-001/004 through
what it does to the pods that must keep running or start (taints on prepared devices, prepare,
CDI edits), which the scenarios check.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


@pytest.mark.e2e_by_hand
def test_drain_001_fails_when_the_driver_evicts_the_pods_on_the_cordoned_node(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-DRAIN-001", ["taint-prepared-devices"])
    result.assert_requirement_failed("resident")


def test_drain_001_fails_when_pods_off_the_cordoned_node_see_another_device(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-DRAIN-001", ["cdi-wrong-device"])
    result.assert_requirement_failed("should see exactly")


def test_drain_002_fails_when_the_driver_cannot_unprepare(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-DRAIN-002", ["fail-unprepare"])
    # The kubelet keeps the evicted pods until their claims are unprepared: the drain stalls.
    result.assert_requirement_failed("evicted but still present")


def test_drain_004_fails_when_the_uncordoned_nodes_pod_cannot_be_prepared(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-DRAIN-004", ["skip-claim-in-prepare"])
    result.assert_requirement_failed()
