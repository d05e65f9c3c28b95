"""A fake scenario suite with one test per typed outcome (used by the Allure tests).

The skip *reason's text* never decides the outcome: test_allocation_mode_all's plain skip reads
"not applicable: ..." and is still not run.
"""

from __future__ import annotations

CATALOG = """\
schema: 1
requirements:
  - id: DRA-CORE-001
    suite: core
    level: MUST
    statement: The driver registers with the kubelet.
  - id: DRA-CORE-002
    suite: core
    level: MUST
    statement: The driver publishes ResourceSlices.
  - id: DRA-LOSS-003
    suite: device_loss
    level: MUST
    statement: A withdrawn device is never allocated.
  - id: DRA-ALLOC-005
    suite: allocation
    level: SHOULD
    statement: allocationMode All allocates every matching device.
  - id: DRA-ALLOC-007
    suite: allocation
    level: MAY
    statement: A prioritized list falls back to the second subrequest.
"""

# One test per typed outcome; the skip *reason's text* never decides (test_allocation_mode_all).
TESTS = """\
import pytest
from conformance.model.outcome import not_applicable, not_run


@pytest.fixture
def prioritized_list():
    not_applicable("the driver profile does not declare capability prioritized-list")


@pytest.mark.dra_requirement("DRA-CORE-001")
def test_registers():
    pass


@pytest.mark.dra_requirement("DRA-CORE-002")
def test_publishes_slices():
    devices: list[str] = []
    assert devices, "the slice lists no device"


@pytest.mark.dra_requirement("DRA-LOSS-003")
def test_withdrawn_device():
    not_run("the profile has no fault method for withdraw", "give the profile a withdraw method")


@pytest.mark.dra_requirement("DRA-ALLOC-005")
def test_allocation_mode_all():
    pytest.skip("not applicable: a plain skip is never not applicable")


@pytest.mark.dra_requirement("DRA-ALLOC-005")
def test_allocation_mode_all_setup_error(broken_fixture):
    pass


@pytest.mark.dra_requirement("DRA-ALLOC-007")
def test_prioritized_list(prioritized_list):
    pass
"""

EXPECTED = {  # test -> (typed outcome, Allure status, category)
    "test_registers": ("passed", "passed", None),
    "test_publishes_slices": ("failed", "failed", "Product defects"),
    "test_withdrawn_device": ("not-run", "skipped", "Not run"),
    "test_allocation_mode_all": ("not-run", "skipped", "Not run"),
    "test_allocation_mode_all_setup_error": ("error", "broken", "Test defects"),
    "test_prioritized_list": ("not-applicable", "skipped", "Not applicable"),
}
SUITE_OF = {
    "test_registers": ("core", "DRA-CORE-001: The driver registers with the kubelet."),
    "test_withdrawn_device": (
        "device_loss",
        "DRA-LOSS-003: A withdrawn device is never allocated.",
    ),
    "test_prioritized_list": (
        "allocation",
        "DRA-ALLOC-007: A prioritized list falls back to the second subrequest.",
    ),
}
