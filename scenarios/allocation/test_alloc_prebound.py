"""DRA-ALLOC-015: a pod pre-bound with spec.nodeName whose claim is not allocated does not run;
the same pod with a kubernetes.io/hostname node selector does."""

from __future__ import annotations

import pytest

from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.scenario_api.placement import node_local_devices
from conformance.scenario_api.workloads import PREPARE_FAILED, Workloads


@pytest.mark.dra_requirement("DRA-ALLOC-015")
@pytest.mark.dra_kubelet_errors(
    "a pre-bound pod's claim is refused by the kubelet (FailedPrepareDynamicResources)"
)
@pytest.mark.dra_devices("default")
def test_prebound_pod_does_not_run_but_node_selector_pod_does(
    workload: Workloads, k8s: K8sClients
) -> None:
    nodes = [n for n, devices in node_local_devices(workload.context).items() if devices]
    assert nodes, "no profile node publishes a device of the default class"
    node = workload.home_node or nodes[0]
    workload.claim("claim")
    workload.pod("prebound", ["claim"], node_name=node)
    uid = (workload.read_claim("claim") or {})["metadata"]["uid"]
    event = waits.wait_for_event(
        k8s,
        workload.namespace,
        reason=PREPARE_FAILED,
        kind="Pod",
        name="prebound",
        message_contains=f"is not allowed to use ResourceClaim claim ({uid})",
        timeout=workload.timeout("podRunning"),
    )
    assert event.get("type") == "Warning", event
    pod = workload.read_pod("prebound") or {}
    statuses = pod.get("status", {}).get("containerStatuses") or []
    started = [s for s in statuses if s.get("started") or "running" in (s.get("state") or {})]
    assert state.pod_phase(pod) == "Pending" and not started, (
        f"containers of the pre-bound pod started: {state.pod_summary(pod)}"
    )
    claim = workload.read_claim("claim") or {}
    assert not state.is_allocated(claim) and not state.reserved_for(claim), (
        f"nothing may be allocated or reserved for the pre-bound pod: {state.claim_summary(claim)}"
    )

    workload.delete_pod("prebound")
    pod = workload.run("placed", ["claim"], node=node, abort_on_prepare_failure=True)
    assert pod["spec"]["nodeName"] == node
    results = workload.results("claim")
    assert len(results) == 1, results
    workload.assert_sees_exactly("placed", results)
