"""Broken-driver check for DRA-LIFE-002, a prepare racing the unprepare of a gracefully deleted
pod's claim. See test_broken_device_loss.py for how broken-driver checks run.

`background-release`: unprepare answers success while the device's release runs on for 15 s;
the kubelet then reports the old pod terminal, the claim controller frees its claim, and the
new pod's claim, allocated the device seconds later, is prepared on the half-released device:
its container does not see the device. The scenario fails in its first round.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e]


def test_life_002_fails_when_unprepare_answers_before_the_device_is_released(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-LIFE-002", ["background-release"])
    result.assert_requirement_failed("prepared it for the new claim on a half-released device")
    assert "round 1 of 3" in result.output, result.explain()
