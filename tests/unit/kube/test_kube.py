"""State readers, wait logic and diagnostics rendering: pure functions, no API server
(tests/apiserver/kube/test_kube.py and tests/apiserver/kube/test_cleanup.py hold the ones that
need one)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from helpers.dra_objects import allocated_status, claim, pod
from kubernetes.client.exceptions import ApiException

from conformance.kube import state
from conformance.kube.builders import ENV_BEGIN, ENV_END, FILE_BEGIN, FILE_END
from conformance.kube.diagnostics import describe_pod, redact, redact_object
from conformance.kube.waits import ConditionBroken, WaitTimeout, ensure_for, wait_until

D = "gpu.example.com"


# --- pure readers ---------------------------------------------------------------------------


def test_parse_workload_output_takes_the_last_complete_block() -> None:
    log = "\n".join(
        [
            ENV_BEGIN,
            "OLD=1",
            ENV_END,
            "noise",
            ENV_BEGIN,
            "A=1",
            "B=x=y",
            "continuation line",
            "DRA_ASSIGNED_GPU_0=w1/gpu-0",
            ENV_END,
            FILE_BEGIN,
            "gpu-0",
            FILE_END,
            ENV_BEGIN,
            "PARTIAL=1",
        ]
    )
    out = state.parse_workload_output(log)
    assert out.env == {"A": "1", "B": "x=y", "DRA_ASSIGNED_GPU_0": "w1/gpu-0"}
    assert out.file == "gpu-0"
    assert out.command is None


def test_parse_workload_output_without_markers_says_why() -> None:
    with pytest.raises(ValueError, match="no complete '=== ENV BEGIN' .. '=== ENV END' block"):
        state.parse_workload_output("exec format error\n")


def test_allocation_results_and_reserved_for() -> None:
    body = {**claim("c", D), "status": allocated_status(D)}
    assert state.allocation_results(body) == [state.AllocationResult("r", D, "w1", "gpu-0")]
    assert state.allocation_results(body)[0].device_id == "w1/gpu-0"
    assert state.reserved_for(body) == [state.ConsumerRef("pods", "p", "u1")]
    assert state.allocation_results(claim("c", D)) == []
    assert not state.is_allocated(claim("c", D)) and state.is_allocated(body)


# --- waits ----------------------------------------------------------------------------------


def test_ensure_for_catches_a_change() -> None:
    values = iter(["Pending", "Pending", "Running"])
    # long enough that the third read comes before it ends, however slow the machine
    with pytest.raises(ConditionBroken, match="expected pod to stay Pending for 60s"):
        ensure_for(
            lambda: next(values),
            lambda v: v == "Pending",
            describe="pod to stay Pending",
            duration=60,
            interval=0.01,
        )
    assert ensure_for(lambda: 1, lambda v: v == 1, describe="x", duration=0.05, interval=0.01) == 1


def test_ensure_for_does_not_retry_a_read_that_fails() -> None:
    reads = []

    def read() -> str:
        reads.append(1)
        if len(reads) == 2:
            raise ConnectionError("connection refused")
        return "Pending"

    with pytest.raises(ConnectionError, match="connection refused"):
        ensure_for(read, lambda v: v == "Pending", describe="x", duration=60, interval=0.01)
    assert len(reads) == 2


def test_wait_until_reports_the_last_error() -> None:
    def read() -> None:
        raise ConnectionError("connection refused")

    with pytest.raises(WaitTimeout, match="last error: ConnectionError: connection refused"):
        wait_until(read, lambda v: True, describe="x", timeout=0.3)


def test_transient_errors_are_retried() -> None:
    # A real API server answers 5xx only when it is in trouble; the retry rule is the
    # harness's, so a reader that fails twice stands in for it.
    answers = iter([ApiException(status=503), ApiException(status=500), "Running"])

    def read() -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert wait_until(read, lambda v: v == "Running", describe="x", timeout=60, interval=0.05) == (
        "Running"
    )


# --- diagnostics ----------------------------------------------------------------------------


def test_redaction() -> None:
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlc2lnbmF0dXJl"
    text = (
        f"Authorization: Bearer abcdefghijklmnop\ntoken: {jwt}\nclient-key-data: QUJD\n"
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nkeep me"
    )
    out = redact(text)
    assert "abcdefghijklmnop" not in out and jwt not in out and "QUJD" not in out
    assert "MIIE" not in out and "keep me" in out
    obj = redact_object(
        {
            "kind": "Pod",
            "spec": {
                "containers": [
                    {
                        "env": [
                            {"name": "API_TOKEN", "value": "s3cret"},
                            {"name": "MODE", "value": "fast"},
                        ]
                    }
                ]
            },
            "metadata": {"managedFields": [1], "name": "p"},
        }
    )
    env = obj["spec"]["containers"][0]["env"]
    assert env == [{"name": "API_TOKEN", "value": "<redacted>"}, {"name": "MODE", "value": "fast"}]
    assert "managedFields" not in obj["metadata"]
    assert (
        redact_object({"kind": "Secret", "metadata": {"name": "s"}, "data": {"a": "b"}})["data"]
        == "<redacted>"
    )


def test_describe_pod_shows_dra_state() -> None:
    body = pod("p")
    body["metadata"]["namespace"] = "t1"
    body["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "cannot allocate",
            }
        ],
        "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}],
    }
    body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    text = describe_pod(
        body,
        [
            {
                "type": "Warning",
                "reason": "FailedScheduling",
                "involvedObject": {"kind": "Pod", "name": "p"},
                "message": "cannot allocate all claims",
            }
        ],
    )
    assert "  gpu: template t -> p-gpu-abcde" in text
    assert "  PodScheduled=False Unschedulable: cannot allocate" in text
    assert "Warning FailedScheduling Pod/p: cannot allocate all claims" in text


def test_containers_started_before_a_moment_leave_the_same_second_out() -> None:
    started = {
        "status": {
            "containerStatuses": [
                {"name": "early", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}},
                {"name": "same", "state": {"terminated": {"startedAt": "2026-01-01T00:00:09Z"}}},
                {"name": "waiting", "state": {"waiting": {"reason": "ContainerCreating"}}},
            ]
        }
    }
    moment = datetime(2026, 1, 1, 0, 0, 10, tzinfo=UTC).timestamp()
    assert list(state.containers_started_before(started, moment)) == ["early"]
    assert state.containers_started_before(None, moment) == {}
