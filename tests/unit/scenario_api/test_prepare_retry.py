"""When a wait has the kubelet retry a failed prepare (conformance.scenario_api.prepare_retry):
only after a FailedPrepareDynamicResources event, then at most every interval."""

from __future__ import annotations

from conformance.scenario_api.prepare_retry import RETRY_INTERVAL, PrepareRetry

FAILED = [{"reason": "FailedPrepareDynamicResources", "type": "Warning"}]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_no_touch_without_a_failed_prepare() -> None:
    touched: list[int] = []
    retry = PrepareRetry(touched.append, clock=Clock())
    assert retry.observe([]) is False
    assert touched == []


def test_a_failed_prepare_is_retried_at_once_then_every_interval() -> None:
    clock, touched = Clock(), []
    retry = PrepareRetry(touched.append, clock=clock)
    assert retry.observe(FAILED) is True
    clock.now += RETRY_INTERVAL - 1
    assert retry.observe(FAILED) is False  # the last retry is too recent
    clock.now += 1
    assert retry.observe(FAILED) is True
    assert touched == [1, 2] and retry.touches == 2
