"""Broken-driver check for DRA-LOSS-013 (a None taint the driver publishes is informational).
See test_broken_device_loss.py for how it runs.

`none-taint-as-noschedule`: the driver publishes a taint asked for with effect None as
NoSchedule, as one written before the effect existed would, so the device it merely annotates
can no longer be allocated without a toleration. The scenario stops at the first such taint,
so the check costs no timeout.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e]


def test_loss_013_fails_when_the_driver_publishes_none_as_noschedule(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-LOSS-013", ["none-taint-as-noschedule"])
    result.assert_requirement_failed("with effect NoSchedule, not None")
