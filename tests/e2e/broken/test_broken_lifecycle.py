"""Broken-driver checks for the driver's lifecycle as the kubelet drives it: unprepare from the
driver's own state (DRA-LIFE-001, and the per-test kubelet check that every scenario test gets,
conformance/plugin/kubelet_check.py), idempotent prepare (DRA-KUBELET-002) and stale state after
a plugin restart (DRA-LOSS-012). See test_broken_device_loss.py for how they run.

`unprepare-needs-claim`: unprepare reads the claim from the API and fails once it is gone, as
after a force delete; the kubelet retries for ever and the claim stays prepared on the node.
`prepare-not-idempotent`: a prepare of a claim already prepared answers an error, which the
kubelet asks for after it restarted (its checkpoint restores claims unprepared).
`restored-claims-stay-busy`: the unprepare of a claim the plugin restored from its checkpoint
at start answers success but keeps the device busy, so no new claim gets it.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e]


def test_life_001_fails_when_unprepare_needs_the_deleted_claim(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-LIFE-001", ["unprepare-needs-claim"])
    result.assert_requirement_failed("does not unprepare from its own state")
    # The per-test kubelet check names the claim left prepared on the node as well.
    assert "gone from the API were never unprepared on the node" in result.output, result.explain()


def test_kubelet_002_fails_when_prepare_is_not_idempotent(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-KUBELET-002", ["prepare-not-idempotent"])
    result.assert_requirement_failed("prepare is not idempotent")
    assert "is already prepared (misbehaviour prepare-not-idempotent)" in result.output, (
        result.explain()
    )


def test_loss_012_fails_when_a_restored_claim_keeps_its_device(run_scenario_against_broken_driver):
    result = run_scenario_against_broken_driver("DRA-LOSS-012", ["restored-claims-stay-busy"])
    result.assert_requirement_failed("(misbehaviour restored-claims-stay-busy)")
