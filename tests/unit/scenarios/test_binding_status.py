"""Binding conditions as a claim shows them, and the trail that catches a pod bound early."""

from __future__ import annotations

from typing import Any

from binding_status_checks import (
    BindingTrail,
    allocated_at,
    failed_conditions,
    missing_conditions,
    ready_for_binding,
    waiting_devices,
)

D = "gpu.example.com"


def _claim(
    at: str | None = "t1", conditions: dict[str, str] | None = None, shared: bool = False
) -> dict[str, Any]:
    result = {
        "request": "r",
        "driver": D,
        "pool": "p",
        "device": "d",
        "bindingConditions": ["Attached", "Linked"],
        "bindingFailureConditions": ["Failed"],
    }
    other = {"request": "r2", "driver": "other.io", "pool": "p", "device": "d"}
    status: dict[str, Any] = {}
    if at is not None:
        status["allocation"] = {
            "devices": {"results": [result, other]},
            "allocationTimestamp": at,
        }
    if conditions is not None:
        entry = {
            "driver": D,
            "pool": "p",
            "device": "d",
            "conditions": [{"type": t, "status": s} for t, s in conditions.items()],
        }
        if shared:
            entry["shareID"] = "s1"  # the scheduler does not look at it
        status["devices"] = [entry]
    return {"status": status}


def _pod(node: str | None) -> dict[str, Any]:
    return {"spec": {"nodeName": node} if node else {}}


def test_the_waiting_devices_are_the_drivers_results_with_binding_conditions() -> None:
    (device,) = waiting_devices(_claim(), D)
    assert (device.id, device.conditions, device.failure_conditions) == (
        "p/d",
        ("Attached", "Linked"),
        ("Failed",),
    )
    assert waiting_devices(_claim(at=None), D) == []
    assert allocated_at(_claim()) == "t1" and allocated_at(_claim(at=None)) is None


def test_ready_only_when_every_condition_is_true_and_none_failed() -> None:
    (device,) = waiting_devices(_claim(), D)
    assert missing_conditions(_claim(), device) == ["Attached", "Linked"]
    half = _claim(conditions={"Attached": "True", "Linked": "False"})
    assert missing_conditions(half, device) == ["Linked"] and not ready_for_binding(half, D)
    both = _claim(conditions={"Attached": "True", "Linked": "True"}, shared=True)
    assert ready_for_binding(both, D)
    failed = _claim(conditions={"Attached": "True", "Linked": "True", "Failed": "True"})
    assert failed_conditions(failed, device) == ["Failed"] and not ready_for_binding(failed, D)
    assert not ready_for_binding(_claim(at=None), D)


def test_the_trail_sees_failures_reallocations_and_early_binding() -> None:
    trail = BindingTrail(D)
    trail.record(_pod(None), _claim())
    trail.record(_pod(None), _claim(conditions={"Failed": "True"}))
    assert not trail.reallocated and not trail.bound_early
    trail.record(_pod(None), _claim(at=None))
    assert trail.reallocated and trail.saw_deallocated
    trail.record(_pod("n1"), _claim(at="t2"))
    assert trail.allocations == ["t1", "t2"]
    assert len(trail.bound_early) == 1 and "missing ['Attached', 'Linked']" in trail.bound_early[0]
    trail.record(_pod("n1"), _claim(at="t2", conditions={"Attached": "True", "Linked": "True"}))
    assert len(trail.bound_early) == 1


def test_a_new_timestamp_alone_is_a_reallocation() -> None:
    trail = BindingTrail(D)
    trail.record(None, _claim(at="t1"))
    trail.record(None, _claim(at="t1"))
    assert not trail.reallocated
    trail.record(None, _claim(at="t2"))
    assert trail.reallocated and not trail.saw_deallocated
