"""Broken-driver checks for the requirements of the claim_deletion suite (see
test_broken_device_loss.py for how they run).

Claim deletion is carried out by the control plane; a driver breaks it by not letting go of a
device (the kubelet then keeps the pod, and with it the claim) or by what it does for the pod
that gets the device next, which the scenarios check through the profile's verification.
DRA-DEL-002 never involves a kubelet before its last step (the claim was allocated through
the status subresource), so that step is where a driver can break it.
"""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.e2e


def test_del_001_fails_when_the_driver_cannot_unprepare(run_scenario_against_broken_driver):
    # The pod stays Terminating, so the deleted claim is never released.
    result = run_scenario_against_broken_driver("DRA-DEL-001", ["fail-unprepare"])
    result.assert_requirement_failed("/user to be deleted")


def test_del_002_fails_when_the_freed_device_reaches_the_container_wrong(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-DEL-002", ["cdi-wrong-device"])
    result.assert_requirement_failed("should see exactly")


def test_del_003_fails_when_the_driver_cannot_unprepare(run_scenario_against_broken_driver):
    # The pod stays Terminating, so its generated claims are never deleted.
    result = run_scenario_against_broken_driver("DRA-DEL-003", ["fail-unprepare"])
    result.assert_requirement_failed("/user to be deleted")


def test_del_004_fails_when_the_awaited_claim_is_never_prepared(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-DEL-004", ["skip-claim-in-prepare"])
    result.assert_requirement_failed("/waiter to be Running")


def test_del_006_fails_when_the_driver_prepares_a_device_still_in_use(
    run_scenario_against_broken_driver,
):
    # The kubelet unprepares the force-deleted pod's claim only after 15 s; a driver that
    # prepares the device for the waiting claim meanwhile lets that pod start first.
    result = run_scenario_against_broken_driver(
        "DRA-DEL-006", ["prepare-held-devices", "slow-unprepare"]
    )
    result.assert_requirement_failed("the driver prepared a device still in use")


@pytest.mark.parametrize(
    "requirement", ["DRA-DEL-001", pytest.param("DRA-DEL-005", marks=pytest.mark.e2e_by_hand)]
)
def test_reuse_probes_fail_when_the_driver_keeps_a_released_device_busy(
    run_scenario_against_broken_driver, requirement
):
    # Unprepare succeeds and the claim goes, but the driver never prepares the device again:
    # the probe, which only the released device (and its look-alikes) can satisfy, must fail
    # naming it.
    result = run_scenario_against_broken_driver(requirement, ["keep-released-devices"])
    result.assert_requirement_failed("misbehaviour keep-released-devices")
    assert re.search(
        r"device \S+ is still busy although claim \S+ was unprepared", result.output
    ), result.explain()
