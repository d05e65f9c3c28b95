"""Per-test timing in the summary: the test body and the lease wait apart from the total."""

from __future__ import annotations

import json

import pytest

from conformance.report.outcomes import PROP_DRIVER_CALLS, PROP_LEASE_WAIT, TestRecord
from conformance.report.summary import _described


def phase(when: str, duration: float, properties=()) -> pytest.TestReport:
    return pytest.TestReport(
        "t.py::test_x",
        ("t.py", 1, "test_x"),
        {},
        "passed",
        None,
        when,
        duration=duration,
        user_properties=list(properties),
    )


def test_body_and_lease_wait_are_kept_apart_from_the_total() -> None:
    record = TestRecord("t.py::test_x")
    waited = [(PROP_LEASE_WAIT, 12.5)]
    record.add_report(phase("setup", 13.0, waited))
    record.add_report(phase("call", 4.0, waited))
    record.add_report(phase("teardown", 2.0, waited))
    entry = record.to_dict()
    assert entry["duration_s"] == pytest.approx(19.0)
    assert entry["body_s"] == pytest.approx(4.0)
    assert entry["lease_wait_s"] == pytest.approx(12.5)


def test_a_test_without_a_lease_or_a_body_reports_none() -> None:
    record = TestRecord("t.py::test_x")
    record.add_report(phase("setup", 0.5))
    entry = record.to_dict()
    assert entry["body_s"] is None and entry["lease_wait_s"] is None


def test_statistics_skip_tests_without_the_figure() -> None:
    stats = _described([1.0, None, 3.0])
    assert stats is not None and stats["count"] == 2 and stats["max"] == 3.0
    assert _described([None, None]) is None


def test_the_driver_calls_of_the_teardown_report_reach_the_summary() -> None:
    rows = [{"method": "NodePrepareResources", "calls": 1, "errors": 0, "mean_s": 0.01}]
    record = TestRecord("t.py::test_x")
    record.add_report(phase("setup", 1.0))
    record.add_report(phase("call", 1.0))
    # the kubelet check records them in the namespace fixture's teardown
    record.add_report(phase("teardown", 1.0, [(PROP_DRIVER_CALLS, json.dumps(rows))]))
    assert record.to_dict()["driver_calls"] == rows
    unmeasured = TestRecord("t.py::test_x")
    unmeasured.add_report(phase("call", 1.0, [(PROP_DRIVER_CALLS, "not json")]))
    assert unmeasured.to_dict()["driver_calls"] is None
