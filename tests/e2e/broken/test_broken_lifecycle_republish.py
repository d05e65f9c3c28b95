"""Broken-driver check for DRA-LIFE-004 (pools across restarts of the driver's plugin pod).

`stale-slice-after-restart`: a restarted plugin that finds slices names its own after its
instance, writes the pool at a higher generation and deletes the old slices but one, which stays
at the lower generation beside the complete new pool. The fake driver resyncs every 5 s, so a
short wait for the settled pool tells the working driver from the broken one (the scenario
fails after its first restart, which already leaves the stale slice).
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e]


def test_life_004_fails_when_a_restart_leaves_a_stale_slice(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver(
        "DRA-LIFE-004",
        ["stale-slice-after-restart"],
        timeouts={"slicesPublished": "20s"},
    )
    result.assert_requirement_failed("slice(s) left from a lower generation: ")
