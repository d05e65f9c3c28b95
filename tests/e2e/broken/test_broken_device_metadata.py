"""Broken-driver checks for device metadata (DRA-CORE-010): a driver whose metadata file of each
request lists all of the claim's devices, as if it described the claim and not the request
(`metadata-all-requests`), must fail it, by the file naming a device not allocated to the request;
one whose files list another device than the allocated one (`metadata-wrong-device`) as well. See
test_broken_core.py for how the checks run."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e]


@pytest.mark.parametrize(
    ("misbehaviour", "message"),
    [
        ("metadata-all-requests", "(not allocated to it: fake.dra-conformance.io"),
        pytest.param(
            "metadata-wrong-device",
            "(missing fake.dra-conformance.io",
            marks=pytest.mark.e2e_by_hand,  # the same judgement; one run is enough for CI
        ),
    ],
)
def test_core_010_fails_when_the_metadata_does_not_match_the_request(
    run_scenario_against_broken_driver, misbehaviour: str, message: str
):
    result = run_scenario_against_broken_driver("DRA-CORE-010", [misbehaviour])
    result.assert_requirement_failed(message)
    assert "device metadata does not match the allocation" in result.output, result.explain()
