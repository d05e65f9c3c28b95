"""Broken-driver check for ResourceClaim device status (DRA-CORE-009): a driver that declares
the device-status capability but never writes `status.devices` (`no-device-status`) must fail
it, by the wait for its entries naming the claim and the devices that got none. See
test_broken_core.py for how the checks run."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e]


def test_core_009_fails_when_the_driver_writes_no_device_status(
    run_scenario_against_broken_driver,
):
    # The working fake driver writes its entries within a second of the prepare, before the
    # pod runs: a shorter wait than the default still leaves it a wide margin.
    result = run_scenario_against_broken_driver(
        "DRA-CORE-009", ["no-device-status"], timeouts={"converge": "10s"}
    )
    result.assert_requirement_failed("to have an entry of driver fake.dra-conformance.io")
    assert "timed out" in result.output, result.explain()
