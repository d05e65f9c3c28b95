"""Broken-driver check for the MUST requirement of the driver_update suite (see
test_broken_device_loss.py for how it runs).

`unprepare-on-shutdown`: the old plugin, stopped by the rolling update, unprepares every claim
it prepared on its way out (CDI specs and checkpoint entries gone), so the running pods'
containers keep their devices only until they restart: then they cannot start.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def test_upd_001_fails_when_the_old_plugin_unprepares_its_claims_on_shutdown(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-UPD-001", ["unprepare-on-shutdown"])
    result.assert_requirement_failed("cannot start: CreateContainerError")
