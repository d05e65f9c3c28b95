"""Waits and diagnostics against the real test API server. Nothing schedules, allocates or
runs pods there: each test writes the status a scheduler or kubelet would write itself."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.dra_objects import allocated_status, claim, pod, resource_slice, slice_device
from kube_apiserver.access import clients_with_rules
from kube_apiserver.server import ApiServer, ClusterScoped, unique_name
from kubernetes.client.exceptions import ApiException

from conformance.kube import state
from conformance.kube.client import K8sClients
from conformance.kube.diagnostics import DiagnosticsRequest, collect_diagnostics
from conformance.kube.waits import (
    WaitAborted,
    WaitTimeout,
    wait_for_claim_allocated,
    wait_for_event,
    wait_for_pod_running,
    wait_for_pod_scheduled_false,
)

D = "gpu.example.com"


def _set_pod_status(k8s: K8sClients, ns: str, name: str, **status: Any) -> None:
    k8s.core.patch_namespaced_pod_status(name, ns, {"status": status})


def test_wait_times_out_with_what_and_the_last_state(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    apiserver_k8s.resource.create_namespaced_resource_claim(api_namespace, claim("c", D))
    with pytest.raises(WaitTimeout) as err:
        wait_for_claim_allocated(apiserver_k8s, api_namespace, "c", timeout=0.5)
    text = str(err.value)
    assert re.match(r"timed out after \d+(\.\d)?s \(limit 0\.5s, \d+ polls\) ", text)
    assert (
        f"waiting for ResourceClaim {api_namespace}/c to be allocated (status.allocation set); "
        "last state seen:\n" in text
    )
    assert "  status: {}" in text


def test_wait_returns_once_done(
    apiserver_k8s: K8sClients, api_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    resource = apiserver_k8s.resource
    resource.create_namespaced_resource_claim(api_namespace, claim("c", D))
    read_claim, reads = state.read_claim, []

    def read_then_allocate(k8s: K8sClients, namespace: str, name: str) -> Any:
        reads.append(read_claim(k8s, namespace, name))
        if len(reads) == 1:
            # The scheduler's part: allocate once the wait saw the claim unallocated (a timer
            # could fire before a loaded machine got the wait going).
            resource.patch_namespaced_resource_claim_status(
                "c", api_namespace, {"status": allocated_status(D)}
            )
        return reads[-1]

    monkeypatch.setattr(state, "read_claim", read_then_allocate)
    got = wait_for_claim_allocated(apiserver_k8s, api_namespace, "c", timeout=60)
    assert not state.is_allocated(reads[0]) and len(reads) >= 2
    assert state.allocation_results(got)[0].device == "gpu-0"


def test_missing_object_is_shown_as_not_found(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    with pytest.raises(WaitTimeout, match="last state seen:\n  not found"):
        wait_for_pod_running(apiserver_k8s, api_namespace, "ghost", timeout=0.3)


def test_pod_that_failed_aborts_the_wait(apiserver_k8s: K8sClients, api_namespace: str) -> None:
    apiserver_k8s.core.create_namespaced_pod(api_namespace, pod("p"))
    _set_pod_status(apiserver_k8s, api_namespace, "p", phase="Failed", reason="Evicted")
    start = time.monotonic()
    with pytest.raises(WaitAborted) as err:
        wait_for_pod_running(apiserver_k8s, api_namespace, "p", timeout=120)
    assert time.monotonic() - start < 60  # at the first look, not at the deadline
    assert (
        f"stopped waiting for pod {api_namespace}/p to be Running: the pod reached phase Failed"
        in str(err.value)
    )
    assert "reason: Evicted" in str(err.value)


def test_scheduled_false_returns_the_condition(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    msg = "0/2 nodes are available: 2 cannot allocate all claims."
    apiserver_k8s.core.create_namespaced_pod(api_namespace, pod("p"))
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    _set_pod_status(apiserver_k8s, api_namespace, "p", conditions=[{**condition, "message": msg}])
    cond = wait_for_pod_scheduled_false(apiserver_k8s, api_namespace, "p", timeout=60)
    assert cond["message"] == msg


def test_forbidden_is_not_retried(
    kube_apiserver: ApiServer,
    apiserver_k8s: K8sClients,
    api_namespace: str,
    cluster_scoped: ClusterScoped,
    tmp_path: Path,
) -> None:
    apiserver_k8s.core.create_namespaced_pod(api_namespace, pod("q"))
    only_nodes = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    restricted = clients_with_rules(
        kube_apiserver, apiserver_k8s, cluster_scoped, api_namespace, only_nodes, tmp_path
    )
    start = time.monotonic()
    with pytest.raises(ApiException) as err:
        wait_for_pod_running(restricted, api_namespace, "q", timeout=120)
    assert err.value.status == 403
    assert time.monotonic() - start < 60  # not retried until the deadline


def test_wait_for_event(apiserver_k8s: K8sClients, api_namespace: str) -> None:
    apiserver_k8s.core.create_namespaced_event(
        api_namespace,
        {
            "metadata": {"name": "e1"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": api_namespace},
            "reason": "FailedPrepareDynamicResources",
            "message": "boom",
            "type": "Warning",
        },
    )
    event = wait_for_event(
        apiserver_k8s,
        api_namespace,
        reason="FailedPrepareDynamicResources",
        kind="Pod",
        name="p",
        timeout=60,
        message_contains="boom",
    )
    assert event["message"] == "boom"
    with pytest.raises(WaitTimeout, match="reason: FailedPrepareDynamicResources"):
        wait_for_event(
            apiserver_k8s, api_namespace, reason="Started", kind="Pod", name="p", timeout=0.3
        )
    # The server's field selector picks the object: an event about another pod is not seen.
    with pytest.raises(WaitTimeout, match="no events about the object"):
        wait_for_event(
            apiserver_k8s,
            api_namespace,
            reason="FailedPrepareDynamicResources",
            kind="Pod",
            name="other",
            timeout=0.3,
        )


def test_collect_diagnostics_writes_files_and_survives_a_failing_step(
    kube_apiserver: ApiServer,
    apiserver_k8s: K8sClients,
    api_namespace: str,
    cluster_scoped: ClusterScoped,
    tmp_path: Path,
) -> None:
    driver = f"{unique_name('d')}.example.com"
    node = unique_name("w1")
    body = pod("p", node_name=node, grace=0)
    body["spec"]["containers"][0]["env"] = [{"name": "PASSWORD", "value": "hunter2"}]
    apiserver_k8s.core.create_namespaced_pod(api_namespace, body)
    apiserver_k8s.resource.create_namespaced_resource_claim(api_namespace, claim("c", driver))
    apiserver_k8s.resource.patch_namespaced_resource_claim_status(
        "c", api_namespace, {"status": allocated_status(driver)}
    )
    cluster_scoped.create(
        resource_slice(node, driver, node, [slice_device("gpu-0", driver, model="x")])
    )
    # Everything the collector reads, except events: a real 403 is the failing step.
    rules = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["list"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list"]},
    ]
    restricted = clients_with_rules(
        kube_apiserver, apiserver_k8s, cluster_scoped, api_namespace, rules, tmp_path
    )
    journals: list[tuple[str, int]] = []

    def kubelet_log(name: str, since: int, lines: int) -> str:
        journals.append((name, lines))
        return f"kubelet of {name} token=hunter3"

    result = collect_diagnostics(
        restricted,
        DiagnosticsRequest(
            namespace=api_namespace,
            out_dir=tmp_path / "d",
            driver=driver,
            since=time.time() - 60,
            kubelet_log=kubelet_log,
            kubelet_log_nodes=["other-node"],
        ),
    )
    names = sorted(p.name for p in result.files)
    assert names == [
        "claims.yaml",
        "errors.txt",
        f"kubelet-{node}.log",
        "pods.txt",
        "resourceslices.yaml",
    ]
    assert result.nodes == [node]
    # Only the node the test's pod ran on, through the node access given; redacted.
    assert journals == [(node, 3000)]
    journal = (tmp_path / f"d/kubelet-{node}.log").read_text()
    assert journal.startswith(f"kubelet of {node}") and "hunter3" not in journal
    assert result.errors == ["events: HTTP 403 Forbidden"]
    pods_text = (tmp_path / "d/pods.txt").read_text()
    claims_text = (tmp_path / "d/claims.yaml").read_text()
    assert "hunter2" not in pods_text + claims_text
    assert "device: gpu-0" in claims_text
    assert f"driver: {driver}" in (tmp_path / "d/resourceslices.yaml").read_text()
