"""Broken-driver checks for binding conditions (DRA-ALLOC-018, DRA-ALLOC-019). See
test_broken_core.py for how the checks run.

`no-binding-status`: the driver publishes devices with bindingConditions but never reports
them, so the pod waits unbound in the scheduler; DRA-ALLOC-018 fails at the wait for the
conditions. `binding-once-per-claim`: the driver reports once per claim UID, so after a binding
failure it stays silent for the claim's new allocation; DRA-ALLOC-019 fails at the wait for the
new allocation's conditions.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e]

# The working fake driver writes the conditions within a second of the allocation; the wait
# adds two scheduler polls (10 s) to this.
TIMEOUTS = {"converge": "10s"}


def test_alloc_018_fails_when_the_driver_never_reports_binding_conditions(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver(
        "DRA-ALLOC-018", ["no-binding-status"], timeouts=TIMEOUTS
    )
    result.assert_requirement_failed("to set every bindingCondition True")
    assert "timed out" in result.output, result.explain()


def test_alloc_019_fails_when_the_driver_ignores_a_reallocation(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver(
        "DRA-ALLOC-019", ["binding-once-per-claim"], timeouts=TIMEOUTS
    )
    result.assert_requirement_failed("of the new allocation of claim retried")
