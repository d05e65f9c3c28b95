"""Broken-driver checks for the MUST requirements of the extended_resource suite (see
test_broken_device_loss.py for how they run).

The scheduler creates and sizes the special claim; a driver breaks extended-resource support
through the device the container gets (DRA-EXT-001) or by not letting go of devices, which
keeps the pending pod of DRA-EXT-003 from ever getting them and the special claim of
DRA-EXT-004 from ever being deleted.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def test_ext_001_fails_when_the_container_sees_another_device(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-EXT-001", ["cdi-wrong-device"])
    result.assert_requirement_failed("should see exactly")


def test_ext_003_fails_when_held_devices_are_never_released(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-EXT-003", ["fail-unprepare"])
    result.assert_requirement_failed("/holder to be deleted")


def test_ext_004_fails_when_the_driver_cannot_unprepare(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-EXT-004", ["fail-unprepare"])
    result.assert_requirement_failed("/user to be deleted")


@pytest.mark.e2e_by_hand
def test_ext_004_fails_when_the_driver_keeps_the_released_device_busy(
    run_scenario_against_broken_driver,
):
    # The special claim is deleted, but the driver never prepares its device again.
    result = run_scenario_against_broken_driver("DRA-EXT-004", ["keep-released-devices"])
    result.assert_requirement_failed("is still busy although claim")
