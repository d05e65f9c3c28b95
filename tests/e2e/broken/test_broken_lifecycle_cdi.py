"""Broken-driver check for DRA-LIFE-003, a SHOULD (CDI specs lost, the driver's checkpoint
kept; see test_broken_device_loss.py for how such checks run).

`cdi-not-recreated`: the restarted plugin does not write again the CDI specs of the claims its
checkpoint holds, so the runtime cannot resolve the claim's CDI device when the kubelet starts
the exited container again, and the container never starts.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e]


def test_life_003_fails_when_the_restarted_driver_does_not_rewrite_lost_cdi_specs(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-LIFE-003", ["cdi-not-recreated"])
    result.assert_requirement_failed("did not write the CDI specs of the claim it holds prepared")
    # A SHOULD: in a full run its failure is reported, not decisive; this run selects no MUST,
    # so it is judged on what it selected (conformance/report/verdict.py).
    assert result.verdict == "NON-CONFORMANT", result.explain()
    # The runtime's own refusal is named, not only the harness's reading of it.
    assert "CreateContainerError" in result.output, result.explain()
