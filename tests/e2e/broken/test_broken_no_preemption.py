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


def assert_fails(run, must_mention: str | None = None) -> None:
    """The requirement failed in the summary and in at least one of its tests."""
    assert run.outcomes, f"no scenario test ran:\n{run.explain()}"
    assert run.failed, f"the broken driver passed:\n{run.explain()}"
    assert run.requirement_status == "failed", run.explain()
    if must_mention:
        assert must_mention in run.output, f"no mention of {must_mention!r}:\n{run.explain()}"


def test_preempt_001_fails_when_the_driver_evicts_device_holders(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-PREEMPT-001", ["taint-prepared-devices"])
    assert_fails(result)


def test_preempt_002_fails_when_the_ended_pod_keeps_its_device(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-PREEMPT-002", ["fail-unprepare"])
    assert_fails(result, "to reach phase Failed")
