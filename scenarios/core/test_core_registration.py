"""DRA-CORE-001: the kubelet accepts the driver's plugin on every node the profile names.

The v1.37.2 kubelet records no event and no API object for a plugin registration, so the
proof is operational: a claim is prepared on each node (the kubelet refuses to prepare for a
driver it has not registered, with FailedPrepareDynamicResources).
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.kube.client import K8sClients
from conformance.run.context import RunContext
from conformance.scenario_api.workloads import Workloads


def registration_error_events(k8s: K8sClients, driver: str) -> list[dict[str, Any]]:
    """Warning events anywhere in the cluster whose reason is a registration failure and whose
    message names `driver`. (A pod's FailedPrepareDynamicResources "driver ... is not
    registered" is not one: it is what any driver restart causes for a moment, and the
    prepare on every node below is what proves registration.)"""
    events = (k8s.to_dict(e) for e in k8s.core.list_event_for_all_namespaces().items)
    return [
        {k: e.get(k) for k in ("reason", "message", "involvedObject", "lastTimestamp")}
        for e in events
        if e.get("type") == "Warning"
        and driver in (e.get("message") or "")
        and "regist" in (e.get("reason") or "").lower()
    ]


@pytest.mark.dra_requirement("DRA-CORE-001")
@pytest.mark.dra_devices("default", across_nodes=True)  # a pod on every node, one at a time
def test_kubelet_prepares_claims_of_the_driver_on_every_node(
    workload: Workloads, dra_context: RunContext, k8s: K8sClients
) -> None:
    assert dra_context.nodes, (
        f"the profile's node selector {dra_context.profile.node_selector!r} matches no node"
    )
    # One node at a time, so the test never holds more than its one leased device.
    for index, node in enumerate(dra_context.nodes):
        name = f"node-{index}"
        workload.claim(name)
        pod = workload.run(name, [name], node=node, abort_on_prepare_failure=True)
        assert pod["spec"]["nodeName"] == node
        results = workload.results(name)
        assert len(results) == 1, f"claim {name} for node {node}: results {results}"
        workload.assert_sees_exactly(name, results)
        workload.delete_pod(name)
        workload.wait_deallocated(name)

    problems = registration_error_events(k8s, dra_context.profile.driver)
    assert not problems, f"events report registration errors of the driver: {problems}"
