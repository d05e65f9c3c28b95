"""Binding conditions: which allocations the driver reports, what it writes, and the
misbehaviours and injected failures that change it."""

from __future__ import annotations

import json
from typing import Any

from fakedriver.binding import BindingReporter, PendingClaim, pending
from fakedriver.controls import FaultState, parse_controls
from fakedriver.kubeapi import ApiError
from fakedriver.slices import render_pool

from unit.fakedriver.conftest import DRIVER, NODE

NOW = "2026-01-01T00:00:00Z"


def _claim(
    *,
    at: str | None = "2026-01-01T00:00:01Z",
    device: str = "fx-0",
    pool: str = NODE,
    statuses: list[dict[str, Any]] | None = None,
    conditions: tuple[str, ...] = ("Attached",),
) -> dict[str, Any]:
    result = {"request": "dev", "driver": DRIVER, "pool": pool, "device": device}
    if conditions:
        result["bindingConditions"] = list(conditions)
        result["bindingFailureConditions"] = ["AttachFailed"]
    status: dict[str, Any] = {}
    if at is not None:
        status["allocation"] = {"devices": {"results": [result]}, "allocationTimestamp": at}
    if statuses:
        status["devices"] = statuses
    return {
        "metadata": {"name": "c", "namespace": "ns", "uid": "u1"},
        "status": status,
    }


def _entry(kind: str, status: str = "True") -> dict[str, Any]:
    return {
        "driver": DRIVER,
        "pool": NODE,
        "device": "fx-0",
        "conditions": [{"type": kind, "status": status}],
    }


class Recorder:
    def __init__(self, fail_with: int | None = None) -> None:
        self.writes: list[tuple[PendingClaim, list[dict[str, Any]]]] = []
        self.fail_with = fail_with

    def apply(self, claim: PendingClaim, entries: list[dict[str, Any]]) -> None:
        if self.fail_with is not None:
            raise ApiError(self.fail_with, "refused")
        self.writes.append((claim, entries))

    def conditions(self) -> list[list[tuple[str, str]]]:
        return [
            [(c["type"], c["reason"]) for e in entries for c in e["conditions"]]
            for _, entries in self.writes
        ]


def _reporter(controls: dict[str, Any] | None = None, recorder: Recorder | None = None):
    faults = FaultState()
    faults.update(parse_controls({NODE: json.dumps(controls or {})}, NODE))
    recorder = recorder or Recorder()
    reporter = BindingReporter(recorder, DRIVER, NODE, faults, now=lambda: NOW, retry_delay=0)
    return reporter, recorder


def test_the_slice_carries_the_binding_conditions(catalog):
    plan = render_pool(DRIVER, NODE, catalog.for_node(NODE), parse_controls({}, NODE))
    devices = {d["name"]: d for s in plan.slices for d in s.spec.get("devices", ())}
    assert devices["fx-0"]["bindingConditions"] == ["Attached"]
    assert devices["fx-0"]["bindingFailureConditions"] == ["AttachFailed"]
    assert devices["fx-0"]["bindsToNode"] is True
    assert "bindingConditions" not in devices["fa80-0"]


def test_only_this_nodes_unreported_devices_with_binding_conditions_are_pending():
    todo = pending(_claim(), DRIVER, NODE)
    assert todo is not None and [d.device for d in todo.devices] == ["fx-0"]
    assert todo.allocated_at == "2026-01-01T00:00:01Z"
    assert pending(_claim(pool="other-node"), DRIVER, NODE) is None
    assert pending(_claim(conditions=()), DRIVER, NODE) is None
    assert pending(_claim(at=None), DRIVER, NODE) is None
    assert pending(_claim(statuses=[_entry("Attached")]), DRIVER, NODE) is None
    assert pending(_claim(statuses=[_entry("AttachFailed")]), DRIVER, NODE) is None
    # A False condition, or another driver's condition, is still to be reported.
    assert pending(_claim(statuses=[_entry("Attached", "False")]), DRIVER, NODE) is not None
    assert pending(_claim(statuses=[_entry("Ready")]), DRIVER, NODE) is not None


def test_each_allocation_is_reported_once_with_every_condition_true():
    reporter, recorder = _reporter()
    reporter.observe(_claim())
    reporter.observe(_claim())  # the same allocation again (an unrelated update)
    assert recorder.conditions() == [[("Attached", "Attached")]]
    (claim, entries), *_ = recorder.writes
    assert (claim.namespace, claim.name, claim.uid) == ("ns", "c", "u1")
    assert entries[0] | {"conditions": None} == {
        "driver": DRIVER,
        "pool": NODE,
        "device": "fx-0",
        "conditions": None,
    }
    assert entries[0]["conditions"][0]["status"] == "True"
    assert entries[0]["conditions"][0]["lastTransitionTime"] == NOW


def test_a_reallocation_is_reported_again_even_within_the_same_second():
    reporter, recorder = _reporter()
    reporter.observe(_claim())
    reporter.observe(_claim(at=None))  # the scheduler deallocated it
    reporter.observe(_claim())
    reporter.observe(_claim(at="2026-01-01T00:00:09Z"))
    assert len(recorder.writes) == 3


def test_an_injected_failure_is_spent_then_the_conditions_are_reported():
    reporter, recorder = _reporter({"devices": {"fx-0": {"failBinding": {"id": "b", "count": 1}}}})
    reporter.observe(_claim())
    reporter.observe(_claim(at=None))
    reporter.observe(_claim(at="2026-01-01T00:00:09Z"))
    assert recorder.conditions() == [[("AttachFailed", "AttachFailed")], [("Attached", "Attached")]]


def test_no_binding_status_never_writes():
    reporter, recorder = _reporter({"misbehaviours": ["no-binding-status"]})
    reporter.observe(_claim())
    assert recorder.writes == []


def test_binding_once_per_claim_is_blind_to_a_reallocation():
    reporter, recorder = _reporter(
        {
            "misbehaviours": ["binding-once-per-claim"],
            "devices": {"fx-0": {"failBinding": {"id": "b", "count": 1}}},
        }
    )
    reporter.observe(_claim())
    reporter.observe(_claim(at=None))
    reporter.observe(_claim(at="2026-01-01T00:00:09Z"))
    assert recorder.conditions() == [[("AttachFailed", "AttachFailed")]]


def test_a_refused_write_is_not_retried_for_the_same_allocation():
    reporter, recorder = _reporter(recorder=Recorder(fail_with=422))
    reporter.observe(_claim())
    assert reporter.failed == 1
    recorder.fail_with = None
    reporter.observe(_claim())  # the refusal was final for this allocation
    assert recorder.writes == []
    reporter.observe(_claim(at="2026-01-01T00:00:09Z"))
    assert len(recorder.writes) == 1


def test_a_transient_write_failure_is_retried_on_the_next_event():
    reporter, recorder = _reporter(recorder=Recorder(fail_with=500))
    reporter.observe(_claim())
    recorder.fail_with = None
    reporter.observe(_claim())
    assert len(recorder.writes) == 1


def test_fail_binding_controls_parse_and_round_trip():
    controls = parse_controls(
        {NODE: json.dumps({"devices": {"fx-0": {"failBinding": {"id": "b", "always": True}}}})},
        NODE,
    )
    assert controls.device("fx-0").to_dict() == {"failBinding": {"id": "b", "always": True}}
    bad = parse_controls({NODE: json.dumps({"devices": {"fx-0": {"failBinding": {}}}})}, NODE)
    assert any("failBinding" in e for e in bad.errors)
