"""Cordon and uncordon with DRA: a cordoned node gets no new pods with claims and none of its
devices (DRA-DRAIN-001); after uncordoning, its devices are allocatable again (DRA-DRAIN-004)."""

from __future__ import annotations

import pytest

from conformance.kube import objects, state, waits
from conformance.kube.builders import PodClaim
from conformance.scenario_api import deployments
from conformance.scenario_api.disruption import PodBaseline, disturbances
from conformance.scenario_api.placement import devices_on, pick_node
from conformance.scenario_api.workloads import HOSTNAME_LABEL


def _assert_node_local(dra_context, workload, pod_name: str, claim: str, not_node: str) -> None:
    """The pod runs off `not_node`, on a device published for the node it runs on."""
    pod = workload.read_pod(pod_name)
    node = pod["spec"]["nodeName"]
    assert node != not_node, f"pod {pod_name} was scheduled to the cordoned node {not_node}"
    [got] = workload.results(claim)
    device = dra_context.device(got.device_id)
    published_for = device.node if device else None
    assert published_for == node, (
        f"pod {pod_name} runs on {node} but claim {claim} was allocated {got.device_id}, "
        f"published for node {published_for}"
    )
    workload.assert_sees_exactly(pod_name, [got])


def _unschedulable(workload, pod: str) -> dict:
    cond = waits.wait_for_pod_scheduled_false(
        workload.k8s, workload.namespace, pod, timeout=workload.timeout("default")
    )
    assert "unschedulable" in (cond.get("message") or ""), (
        f"pod {pod} is unschedulable, but not because of the cordon: {cond}"
    )
    return cond


@pytest.mark.dra_requirement("DRA-DRAIN-001")
@pytest.mark.dra_node_exclusive(at_least=2)  # cordons the node
@pytest.mark.dra_devices("default", count=1)  # pod drifter, on another node
def test_cordoned_node_gets_no_new_claims_and_keeps_running_pods(
    dra_context, k8s, workload, node_ops, device_lease
):
    node = pick_node(dra_context, at_least=2, others_at_least=1, lease=device_lease)
    workload.claim("resident")
    baseline = PodBaseline.of(workload.run("resident", ["resident"], node=node))
    [held] = workload.results("resident")

    node_ops.cordon(node)
    # Must run on the node: never scheduled there, its claim never allocated.
    workload.claim("pinned")
    workload.pod("pinned", ["pinned"], node=node)
    _unschedulable(workload, "pinned")
    # Prefers the node (it would land there otherwise): goes elsewhere, with that node's device.
    workload.claim("drifter")
    body = workload.build.pod(
        "drifter",
        workload.namespace,
        image=dra_context.workload_image,
        claims=[PodClaim("drifter", claim="drifter")],
    )
    body["spec"]["affinity"] = deployments.prefer_node(workload.node_selector(node)[HOSTNAME_LABEL])
    objects.create(k8s, body)
    workload.wait_running("drifter")
    _assert_node_local(dra_context, workload, "drifter", "drifter", node)

    def snapshot():
        return (
            workload.read_pod("pinned"),
            workload.read_claim("pinned"),
            workload.read_pod("resident"),
        )

    waits.ensure_for(
        snapshot,
        lambda s: (
            not (s[0] or {}).get("spec", {}).get("nodeName")
            and not state.is_allocated(s[1])
            and not disturbances(baseline, s[2])
        ),
        describe=f"pod pinned to stay unscheduled and unallocated while {node} is cordoned, "
        "and pod resident on it to keep running",
        duration=dra_context.timeout("settle"),
        show=lambda s: {
            "pinned": state.pod_summary(s[0]),
            "pinned claim": state.claim_summary(s[1]),
            "resident": disturbances(baseline, s[2]) or state.pod_summary(s[2]),
        },
    )
    claim = workload.read_claim("resident")
    assert [r.device_id for r in state.allocation_results(claim)] == [held.device_id]


@pytest.mark.dra_requirement("DRA-DRAIN-004")
@pytest.mark.dra_node_exclusive  # drains the node
@pytest.mark.dra_devices("default", count=1)  # the drained pod's replacement, on another node
def test_uncordoned_node_devices_are_allocatable_again(
    dra_context, k8s, workload, node_ops, device_lease
):
    node = pick_node(dra_context, at_least=1, others_at_least=1, lease=device_lease)
    node_devices = {d.id for d in devices_on(dra_context, node)}
    workload.template("one-device")
    deployments.create_claim_deployment(workload, "app", template="one-device", prefer=node)
    [pod] = deployments.wait_ready_pods(workload, "app", 1)
    assert pod["spec"]["nodeName"] == node, (
        f"setup: pod {pod['metadata']['name']} prefers {node} but runs on {pod['spec']['nodeName']}"
    )
    node_ops.drain(node)
    deployments.wait_ready_pods(workload, "app", 1, exclude_uids={pod["metadata"]["uid"]})

    workload.claim("returning")
    workload.pod("returning", ["returning"], node=node)
    _unschedulable(workload, "returning")  # control: the cordon is what holds it back
    node_ops.uncordon(node)
    workload.wait_allocated("returning")
    [got] = workload.results("returning")
    assert got.device_id in node_devices, (
        f"claim returning (pinned to {node}) got {got.device_id}, not one of {node}'s devices "
        f"{sorted(node_devices)}"
    )
    workload.wait_running("returning")
    workload.assert_sees_exactly("returning", [got])
