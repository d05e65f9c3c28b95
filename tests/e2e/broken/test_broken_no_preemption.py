"""Broken-driver checks for the MUST requirements of the no_preemption suite (see
test_broken_device_loss.py for how they run).

No driver can make the v1.37 scheduler preempt for a device. What a driver can break in
DRA-PREEMPT-001 is "the low-priority pod is not evicted": a driver that taints the devices it
has prepared NoExecute gets their pods evicted by the device taint manager. In DRA-PREEMPT-002
a driver that cannot unprepare keeps the ended pod's device, so the waiting pod never gets it.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def test_preempt_001_fails_when_the_driver_evicts_device_holders(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-PREEMPT-001", ["taint-prepared-devices"])
    result.assert_requirement_failed()


def test_preempt_002_fails_when_the_ended_pod_keeps_its_device(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-PREEMPT-002", ["fail-unprepare"])
    result.assert_requirement_failed("to reach phase Failed")
