"""Waits (tenacity, list-and-poll) that fail with what was awaited, for how long, and the last
state seen - the three things needed to tell "slow" from "broken" without rerunning.

Polling, not watches: watches end on server timeouts and 410 Gone, and a conformance assert
wants the state at the deadline, not an event stream. Transient API errors (409, 429, 5xx,
connection resets) are retried; 401/403/422 and the like fail at once.

A pod wait whose pod cannot get its image raises a `HarnessError` at once
(`harness_causes`): the requirement's error, not the driver's failure.

Each wait is an Allure step "wait for <describe>" (`ensure_for`: "keep checking for <duration>
that <describe>"), failed when the wait fails (conformance.observe.steps).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import tenacity
import urllib3
import yaml
from kubernetes.client.exceptions import ApiException

from conformance.kube import state
from conformance.kube.client import K8sClients
from conformance.kube.harness_causes import pull_failure_abort
from conformance.observe.steps import attach_yaml, step, wait_step

T = TypeVar("T")

_RETRYABLE_STATUS = {409, 429, 500, 502, 503, 504}
_STATE_LIMIT = 6000


class WaitTimeout(AssertionError):
    """An AssertionError, so pytest reports the test as failed rather than broken."""


class WaitAborted(AssertionError):
    """The awaited state became impossible (e.g. the pod failed while we waited for Running)."""


class ConditionBroken(AssertionError):
    """Something that had to stay true for a while stopped being true."""


def _secs(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"


def render_state(value: Any) -> str:
    """Compact YAML of a state, managedFields dropped, cut to a readable size."""
    text = yaml.safe_dump(
        _drop_noise(value), default_flow_style=False, sort_keys=False, width=100
    ).rstrip()
    if len(text) > _STATE_LIMIT:
        text = text[:_STATE_LIMIT] + f"\n... ({len(text) - _STATE_LIMIT} more characters)"
    return "\n".join("  " + line for line in text.splitlines())


def _drop_noise(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _drop_noise(v) for k, v in value.items() if k != "managedFields" and v is not None
        }
    if isinstance(value, list | tuple):
        return [_drop_noise(v) for v in value]
    return value


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, ApiException):
        return exc.status in _RETRYABLE_STATUS
    return isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError)


def wait_until(
    read: Callable[[], T],
    done: Callable[[T], bool],
    *,
    describe: str,
    timeout: float,
    interval: float = 1.0,
    show: Callable[[T], Any] | None = None,
    abort: Callable[[T], str | None] | None = None,
) -> T:
    """Poll `read()` until `done(value)`; return that value.

    `describe` completes "waiting for ...". `show` picks what of the value to print on
    timeout (default: all of it). `abort` returns a reason when waiting longer is pointless.
    """
    start = time.monotonic()
    seen: dict[str, Any] = {"polls": 0}

    def attempt() -> T:
        seen["polls"] += 1
        try:
            value = read()
        except BaseException as exc:
            seen["error"] = f"{type(exc).__name__}: {exc}"
            raise
        seen.pop("error", None)
        seen["value"] = value
        if abort is not None:
            reason = abort(value)
            if reason:
                raise WaitAborted(
                    f"stopped waiting for {describe}: {reason}; state seen:\n"
                    + render_state((show or (lambda v: v))(value))
                )
        return value

    def on_timeout(retry_state: tenacity.RetryCallState) -> T:
        elapsed = time.monotonic() - start
        if "value" in seen:
            last = render_state((show or (lambda v: v))(seen["value"]))
        else:
            last = "  (nothing read successfully)"
        if "error" in seen:
            last += f"\n  last error: {seen['error']}"
        raise WaitTimeout(
            f"timed out after {_secs(elapsed)} (limit {_secs(timeout)}, {seen['polls']} polls) "
            f"waiting for {describe}; last state seen:\n{last}"
        )

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_delay(timeout),
        wait=tenacity.wait_exponential(multiplier=interval / 4, min=interval / 4, max=interval),
        retry=tenacity.retry_if_result(lambda v: not done(v))
        | tenacity.retry_if_exception(_retryable),
        retry_error_callback=on_timeout,
        reraise=True,
    )
    with wait_step(describe):
        return retrying(attempt)


def ensure_for(
    read: Callable[[], T],
    holds: Callable[[T], bool],
    *,
    describe: str,
    duration: float,
    interval: float = 1.0,
    show: Callable[[T], Any] | None = None,
) -> T:
    """Assert `holds(read())` on every poll for `duration` seconds ("stays Pending")."""
    with step(f"keep checking for {_secs(duration)} that {describe}"):
        return _ensure_for(
            read, holds, describe=describe, duration=duration, interval=interval, show=show
        )


def _ensure_for(
    read: Callable[[], T],
    holds: Callable[[T], bool],
    *,
    describe: str,
    duration: float,
    interval: float,
    show: Callable[[T], Any] | None,
) -> T:
    # Keep reading while it holds; the stop is the success, a read where it does not hold ends
    # the retries early (and a read that raises is not retried: it propagates).
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_delay(duration),
        wait=tenacity.wait_fixed(interval),
        retry=tenacity.retry_if_result(holds),
        retry_error_callback=lambda retry_state: retry_state.outcome.result(),
        reraise=True,
    )
    start = time.monotonic()
    value = retrying(read)
    if not holds(value):
        raise ConditionBroken(
            f"expected {describe} for {_secs(duration)}, but after "
            f"{_secs(time.monotonic() - start)} it no longer held; state seen:\n"
            + render_state((show or (lambda v: v))(value))
        )
    return value


# --- the waits scenarios use ----------------------------------------------------------------


def wait_for_claim_allocated(
    k8s: K8sClients, namespace: str, name: str, *, timeout: float
) -> dict[str, Any]:
    claim = wait_until(
        lambda: state.read_claim(k8s, namespace, name),
        state.is_allocated,
        describe=f"ResourceClaim {namespace}/{name} to be allocated (status.allocation set)",
        timeout=timeout,
        show=state.claim_summary,
    )
    attach_yaml(f"ResourceClaim {name} (allocated)", claim)
    return claim  # type: ignore[return-value]


def _pod_finished(pod: dict[str, Any] | None) -> str | None:
    pull_failure_abort(pod)  # an image the nodes cannot get: the harness's error, at once
    phase = state.pod_phase(pod)
    return f"the pod reached phase {phase}" if phase in ("Succeeded", "Failed") else None


def wait_for_pod_running(
    k8s: K8sClients, namespace: str, name: str, *, timeout: float
) -> dict[str, Any]:
    pod = wait_until(
        lambda: state.read_pod(k8s, namespace, name),
        lambda pod: state.pod_phase(pod) == "Running",
        describe=f"pod {namespace}/{name} to be Running",
        timeout=timeout,
        show=state.pod_summary,
        abort=_pod_finished,
    )
    attach_yaml(f"Pod {name} (running)", pod)
    return pod  # type: ignore[return-value]


def wait_for_pod_phase(
    k8s: K8sClients, namespace: str, name: str, phase: str, *, timeout: float
) -> dict[str, Any]:
    return wait_until(
        lambda: state.read_pod(k8s, namespace, name),
        lambda pod: state.pod_phase(pod) == phase,
        describe=f"pod {namespace}/{name} to reach phase {phase}",
        timeout=timeout,
        show=state.pod_summary,
        abort=None if phase == "Pending" else pull_failure_abort,
    )  # type: ignore[return-value]


def wait_for_pod_scheduled_false(
    k8s: K8sClients,
    namespace: str,
    name: str,
    *,
    timeout: float,
    abort: Callable[[dict[str, Any] | None], str | None] | None = None,
) -> dict[str, Any]:
    """Wait for condition PodScheduled=False (the scheduler looked and could not place it);
    returns the condition, whose message names the problem. `abort` may name, from the pod
    read, why waiting is pointless (checked before "the pod was scheduled")."""

    def scheduled(pod: dict[str, Any] | None) -> str | None:
        cond = state.pod_condition(pod, "PodScheduled") if pod else None
        return cond.get("status") if cond else None

    pod = wait_until(
        lambda: state.read_pod(k8s, namespace, name),
        lambda p: scheduled(p) == "False",
        describe=f"pod {namespace}/{name} to have condition PodScheduled=False",
        timeout=timeout,
        show=state.pod_summary,
        abort=lambda p: (
            (abort(p) if abort else None)
            or ("the pod was scheduled" if scheduled(p) == "True" else None)
        ),
    )
    return state.pod_condition(pod, "PodScheduled") or {}  # type: ignore[arg-type]


def wait_for_deleted(read: Callable[[], Any], *, describe: str, timeout: float) -> None:
    """Wait until `read()` returns None (the state readers return None on 404)."""
    wait_until(
        read,
        lambda v: v is None,
        describe=f"{describe} to be deleted",
        timeout=timeout,
        show=lambda v: (
            {
                "metadata": {
                    k: (v.get("metadata") or {}).get(k) for k in ("deletionTimestamp", "finalizers")
                },
                "status": v.get("status"),
            }
            if isinstance(v, dict)
            else v
        ),
    )


def wait_for_event(
    k8s: K8sClients,
    namespace: str,
    *,
    reason: str,
    kind: str,
    name: str,
    timeout: float,
    message_contains: str | None = None,
) -> dict[str, Any]:
    """Wait for an Event with `reason` about object kind/name; returns the newest such event."""

    def matching(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            e
            for e in events
            if e.get("reason") == reason
            and (message_contains is None or message_contains in (e.get("message") or ""))
        ]

    extra = f" with message containing {message_contains!r}" if message_contains else ""
    events = wait_until(
        lambda: state.events_for(k8s, namespace, kind=kind, name=name),
        lambda evs: bool(matching(evs)),
        describe=f"an event with reason {reason}{extra} about {kind} {namespace}/{name}",
        timeout=timeout,
        show=lambda evs: (
            [{k: e.get(k) for k in ("type", "reason", "message", "count")} for e in evs[-15:]]
            or "no events about the object"
        ),
    )
    return matching(events)[-1]
