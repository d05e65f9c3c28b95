"""Broken-driver checks for the MUST requirements of the device_loss suite: each requirement's
scenario must FAIL against a fake driver that breaks it (the fixture switches the
misbehaviour on, runs the scenario in a subprocess on the same cluster, switches it off).

DeviceTaintRules are enforced by the control plane, not by the driver: what a driver can break
in DRA-LOSS-001/002 is the device the replacement or new pod actually gets (its CDI edits),
which both scenarios check through the profile's verification.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def failed_tests(result) -> list[str]:
    return [n for n, outcome in result.outcomes.items() if outcome in ("failed", "error")]


def test_loss_001_fails_when_the_replacement_sees_another_device(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-LOSS-001", ["cdi-wrong-device"])
    assert failed_tests(result), result.output
    assert "should see exactly" in result.output, result.output


def test_loss_002_fails_when_the_new_pod_sees_another_device(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-LOSS-002", ["cdi-wrong-device"])
    assert failed_tests(result), result.output
    assert "should see exactly" in result.output, result.output


def test_loss_003_fails_when_a_withdrawn_device_stays_published(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-LOSS-003", ["keep-withdrawn-device"])
    assert failed_tests(result), result.output
    assert "ResourceSlices for" in result.output and "and not" in result.output, result.output


def test_loss_006_fails_when_the_driver_loses_its_checkpoint_on_restart(
    run_scenario_against_broken_driver,
):
    # The restarted driver forgets what it prepared and cleans up the running claim's CDI
    # spec, so the running pod's container cannot start again.
    result = run_scenario_against_broken_driver("DRA-LOSS-006", ["lose-checkpoint-on-restart"])
    assert failed_tests(result), result.output
    assert "container main of pod survivor" in result.output, result.output
