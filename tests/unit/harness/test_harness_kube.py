"""State readers, waits, cleanup and diagnostics against an in-memory API server."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness_fakeapi import FakeAPI, namespace, node, resource_slice, slice_device
from kubernetes.client.exceptions import ApiException

from conformance.kube import state
from conformance.kube.builders import ENV_BEGIN, ENV_END, FILE_BEGIN, FILE_END, Builders
from conformance.kube.cleanup import NamespaceRegistry, create_test_namespace, sweep_run
from conformance.kube.client import K8sClients
from conformance.kube.diagnostics import (
    DiagnosticsRequest,
    collect_diagnostics,
    describe_pod,
    redact,
    redact_object,
)
from conformance.kube.objects import ClusterObjects
from conformance.kube.waits import (
    ConditionBroken,
    WaitAborted,
    WaitTimeout,
    ensure_for,
    wait_for_claim_allocated,
    wait_for_event,
    wait_for_pod_running,
    wait_for_pod_scheduled_false,
    wait_until,
)
from conformance.model.naming import CORDONED_BY_LABEL, RUN_LABEL

D = "gpu.example.com"
RG = "resource.k8s.io/v1"


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    server = FakeAPI()
    yield server
    server.close()


@pytest.fixture
def k8s(api: FakeAPI) -> K8sClients:
    return api.clients()


def pod(name: str, ns: str = "t1", phase: str = "Pending", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "main", "image": "w"}]},
        "status": {"phase": phase, **status},
    }


def claim(name: str, ns: str = "t1", allocated: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": RG,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": D}}]}},
    }
    if allocated:
        body["status"] = {
            "allocation": {
                "devices": {
                    "results": [{"request": "r", "driver": D, "pool": "w1", "device": "gpu-0"}]
                }
            },
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
        }
    return body


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
    body = claim("c", allocated=True)
    assert state.allocation_results(body) == [state.AllocationResult("r", D, "w1", "gpu-0")]
    assert state.allocation_results(body)[0].device_id == "w1/gpu-0"
    assert state.reserved_for(body) == [state.ConsumerRef("pods", "p", "u1")]
    assert state.allocation_results(claim("c")) == []
    assert not state.is_allocated(claim("c")) and state.is_allocated(body)


# --- waits ----------------------------------------------------------------------------------


def test_wait_times_out_with_what_and_the_last_state(api: FakeAPI, k8s: K8sClients) -> None:
    api.add("resourceclaims", claim("c"), gv=RG)
    with pytest.raises(WaitTimeout) as err:
        wait_for_claim_allocated(k8s, "t1", "c", timeout=0.5)
    text = str(err.value)
    assert re.match(r"timed out after \d\.\ds \(limit 0\.5s, \d+ polls\) ", text)
    assert (
        "waiting for ResourceClaim t1/c to be allocated (status.allocation set); "
        "last state seen:\n" in text
    )
    assert "  status: {}" in text


def test_wait_returns_once_done(api: FakeAPI, k8s: K8sClients) -> None:
    api.add("resourceclaims", claim("c"), gv=RG)
    threading.Timer(
        0.3, lambda: api.add("resourceclaims", claim("c", allocated=True), gv=RG)
    ).start()
    got = wait_for_claim_allocated(k8s, "t1", "c", timeout=10)
    assert state.allocation_results(got)[0].device == "gpu-0"


def test_missing_object_is_shown_as_not_found(k8s: K8sClients) -> None:
    with pytest.raises(WaitTimeout, match="last state seen:\n  not found"):
        wait_for_pod_running(k8s, "t1", "ghost", timeout=0.3)


def test_pod_that_failed_aborts_the_wait(api: FakeAPI, k8s: K8sClients) -> None:
    api.add("pods", pod("p", phase="Failed", reason="Evicted"))
    start = time.monotonic()
    with pytest.raises(WaitAborted) as err:
        wait_for_pod_running(k8s, "t1", "p", timeout=30)
    assert time.monotonic() - start < 5
    assert "stopped waiting for pod t1/p to be Running: the pod reached phase Failed" in str(
        err.value
    )
    assert "reason: Evicted" in str(err.value)


def test_scheduled_false_returns_the_condition(api: FakeAPI, k8s: K8sClients) -> None:
    msg = "0/2 nodes are available: 2 cannot allocate all claims."
    api.add(
        "pods",
        pod(
            "p",
            conditions=[
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": msg,
                }
            ],
        ),
    )
    cond = wait_for_pod_scheduled_false(k8s, "t1", "p", timeout=5)
    assert cond["message"] == msg


def test_transient_errors_are_retried_and_forbidden_is_not(api: FakeAPI, k8s: K8sClients) -> None:
    answers = iter([(503, {"kind": "Status", "code": 503})] * 2)
    api.handlers.append(lambda m, p, q, b: next(answers, None) if p.endswith("/pods/p") else None)
    api.add("pods", pod("p", phase="Running"))
    assert state.pod_phase(wait_for_pod_running(k8s, "t1", "p", timeout=10)) == "Running"
    api.handlers.append(
        lambda m, p, q, b: (403, {"kind": "Status", "code": 403}) if p.endswith("/pods/q") else None
    )
    with pytest.raises(ApiException) as err:
        wait_for_pod_running(k8s, "t1", "q", timeout=10)
    assert err.value.status == 403


def test_wait_for_event(api: FakeAPI, k8s: K8sClients) -> None:
    api.add(
        "events",
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "e1", "namespace": "t1"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": "FailedPrepareDynamicResources",
            "message": "boom",
            "type": "Warning",
        },
    )
    event = wait_for_event(
        k8s,
        "t1",
        reason="FailedPrepareDynamicResources",
        kind="Pod",
        name="p",
        timeout=5,
        message_contains="boom",
    )
    assert event["message"] == "boom"
    with pytest.raises(WaitTimeout, match="reason: FailedPrepareDynamicResources"):
        wait_for_event(k8s, "t1", reason="Started", kind="Pod", name="p", timeout=0.3)


def test_ensure_for_catches_a_change() -> None:
    values = iter(["Pending", "Pending", "Running"])
    with pytest.raises(ConditionBroken, match="expected pod to stay Pending for 5.0s"):
        ensure_for(
            lambda: next(values),
            lambda v: v == "Pending",
            describe="pod to stay Pending",
            duration=5,
            interval=0.01,
        )
    assert ensure_for(lambda: 1, lambda v: v == 1, describe="x", duration=0.05, interval=0.01) == 1


def test_wait_until_reports_the_last_error() -> None:
    def read() -> None:
        raise ConnectionError("connection refused")

    with pytest.raises(WaitTimeout, match="last error: ConnectionError: connection refused"):
        wait_until(read, lambda v: True, describe="x", timeout=0.3)


# --- cleanup --------------------------------------------------------------------------------


def test_namespace_registry_and_sweep(api: FakeAPI, k8s: K8sClients, tmp_path: Path) -> None:
    registry = NamespaceRegistry(tmp_path / "ns")
    builders = Builders("run-1")
    create_test_namespace(k8s, builders, registry, "dra-a", "tests/x.py::test_a")
    assert api.get("namespaces", "dra-a")["metadata"]["labels"][RUN_LABEL] == "run-1"
    assert [r["namespace"] for r in registry.entries()] == ["dra-a"]
    api.add("namespaces", namespace("other-run", {RUN_LABEL: "run-0"}))
    objects = ClusterObjects(k8s)
    objects.create(builders.device_taint_rule("t", driver=D, key="k", effect="NoExecute"))
    objects.create(builders.priority_class("high", 100))
    api.add("nodes", node("w1", {CORDONED_BY_LABEL: "run-1"}))
    api.nodes_patched = True
    # Namespaces take a moment to terminate.
    api.delete_hook = lambda obj: (
        obj["kind"] == "Namespace" and not obj["metadata"].get("deletionTimestamp")
    )
    threading.Timer(0.5, lambda: api.objects.pop(("v1", "namespaces", None, "dra-a"))).start()
    result = sweep_run(k8s, "run-1", registry, timeout=10, api_versions=[RG])
    assert result.namespaces == ["dra-a"]
    assert result.cluster_objects == ["DeviceTaintRule/t", "PriorityClass/high"]
    assert result.uncordoned == ["w1"]
    assert result.leftovers == []
    assert api.get("namespaces", "other-run") is not None  # another run's: untouched
    assert api.get("nodes", "w1")["metadata"]["labels"] == {}
    assert registry.entries() == []
    assert result.summary() == (
        "cleaned up 1 namespace(s); 2 cluster object(s): "
        "DeviceTaintRule/t, PriorityClass/high; uncordoned w1"
    )


def test_sweep_names_what_is_stuck(api: FakeAPI, k8s: K8sClients) -> None:
    api.add("namespaces", namespace("dra-stuck", {RUN_LABEL: "run-1"}))
    api.delete_hook = lambda obj: True  # never goes away
    result = sweep_run(k8s, "run-1", None, timeout=0.5, api_versions=[])
    assert result.leftovers == ["namespace/dra-stuck"]
    assert result.summary().endswith("STILL PRESENT: namespace/dra-stuck")


def test_cluster_objects_are_deleted_in_reverse(api: FakeAPI, k8s: K8sClients) -> None:
    objects = ClusterObjects(k8s)
    builders = Builders("run-1")
    objects.create(builders.device_class("c"))
    objects.create(builders.device_taint_rule("t", driver=D, key="k", effect="NoSchedule"))
    objects.create(
        builders.resource_claim("cl", "t1", [{"name": "r", "exactly": {"deviceClassName": "c"}}])
    )  # namespaced: goes with its namespace
    assert objects.delete_all() == []
    deletes = [p.split("?")[0] for m, p in api.requests if m == "DELETE"]
    assert deletes == [
        "/apis/resource.k8s.io/v1/devicetaintrules/t",
        "/apis/resource.k8s.io/v1/deviceclasses/c",
    ]
    assert api.get("resourceclaims", "cl", "t1", gv=RG) is not None


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
    body = pod(
        "p",
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "cannot allocate",
            }
        ],
        resourceClaimStatuses=[{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}],
    )
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


def test_collect_diagnostics_writes_files_and_survives_a_failing_step(
    api: FakeAPI, k8s: K8sClients, tmp_path: Path
) -> None:
    body = pod("p", phase="Running")
    body["spec"]["nodeName"] = "w1"
    body["spec"]["containers"][0]["env"] = [{"name": "PASSWORD", "value": "hunter2"}]
    api.add("pods", body)
    api.add("resourceclaims", claim("c", allocated=True), gv=RG)
    api.add("resourceslices", resource_slice("s", D, "w1", [slice_device("gpu-0", D)]), gv=RG)
    api.handlers.append(
        lambda m, p, q, b: (
            (500, {"kind": "Status", "code": 500}) if p == "/api/v1/namespaces/t1/events" else None
        )
    )
    result = collect_diagnostics(
        k8s,
        DiagnosticsRequest(
            namespace="t1", out_dir=tmp_path / "d", driver=D, since=time.time() - 60
        ),
    )
    names = sorted(p.name for p in result.files)
    assert names == ["claims.yaml", "errors.txt", "pods.txt", "resourceslices.yaml"]
    assert result.nodes == ["w1"]
    assert result.errors == ["events: HTTP 500 Internal Server Error"]
    assert (
        "hunter2"
        not in (tmp_path / "d/pods.txt").read_text() + (tmp_path / "d/claims.yaml").read_text()
    )
    assert "device: gpu-0" in (tmp_path / "d/claims.yaml").read_text()
