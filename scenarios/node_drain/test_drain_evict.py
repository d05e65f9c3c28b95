"""Draining a node through the Eviction API with DRA workloads: pods are evicted, unprepared and
deallocated, replaced on another node's devices, with the driver left until last
(DRA-DRAIN-002); PodDisruptionBudgets are honoured (DRA-DRAIN-003)."""

from __future__ import annotations

import pytest

from conformance.kube import objects, state, waits
from conformance.kube.daemonsets import wait_ready_pod_on_node
from conformance.scenario_api import deployments
from conformance.scenario_api.disruption import PodBaseline, disturbances
from conformance.scenario_api.placement import devices_on, pick_node


def _deploy_on(workload, node: str, replicas: int) -> list[dict]:
    workload.template("one-device")
    deployments.create_claim_deployment(
        workload, "app", template="one-device", replicas=replicas, prefer=node
    )
    pods = deployments.wait_ready_pods(workload, "app", replicas)
    elsewhere = [p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] != node]
    assert not elsewhere, f"setup: pods {elsewhere} prefer {node} but were placed elsewhere"
    return pods


def _assert_replacements_elsewhere(dra_context, workload, old_uids, node: str, count: int):
    drained = {d.id for d in devices_on(dra_context, node)}
    replacements = deployments.wait_ready_pods(workload, "app", count, exclude_uids=old_uids)
    for pod in replacements:
        name, runs_on = pod["metadata"]["name"], pod["spec"]["nodeName"]
        assert runs_on != node, f"replacement {name} runs on the drained node {node}"
        [got] = workload.results(deployments.claim_of(workload, pod))
        device = dra_context.device(got.device_id)
        assert got.device_id not in drained and device is not None and device.node == runs_on, (
            f"replacement {name} on {runs_on} got {got.device_id} "
            f"(published for {device.node if device else 'no node'})"
        )
        workload.assert_sees_exactly(name, [got])


@pytest.mark.dra_requirement("DRA-DRAIN-002")
@pytest.mark.dra_node_exclusive(at_least=2)  # drains the node
@pytest.mark.dra_devices("default", count=2)  # the replacements, on other nodes
def test_drain_evicts_unprepares_and_replaces_pods_with_the_driver_last(
    dra_context, k8s, workload, node_ops, device_lease
):
    readiness = dra_context.profile.readiness
    if not (readiness.daemonset_name and readiness.daemonset_namespace):
        pytest.fail("the profile has no readiness.daemonSet: the drain requirement checks "
                    "that the driver's kubelet-plugin pod is left until last")  # fmt: skip
    node = pick_node(dra_context, at_least=2, others_at_least=2, lease=device_lease)
    plugin = PodBaseline.of(
        wait_ready_pod_on_node(
            k8s,
            readiness.daemonset_namespace,
            readiness.daemonset_name,
            node,
            timeout=dra_context.timeout("default"),
        )  # fmt: skip
    )
    pods = _deploy_on(workload, node, replicas=2)
    claims = [deployments.claim_of(workload, p) for p in pods]

    def check(progress) -> None:
        # The plugin must still serve NodeUnprepareResources while its consumers go.
        problems = disturbances(plugin, state.read_pod(k8s, plugin.namespace, plugin.name))
        assert not problems, "driver plugin disturbed during the drain: " + "; ".join(problems)

    # The v1.37 kubelet removes a terminated pod only once NodeUnprepareResources succeeded
    # for its claims (it records no event when it fails): a drain that completes - every
    # evicted pod gone - is one whose claims were unprepared.
    result = node_ops.drain(node, on_progress=check)
    evicted = {p.uid for p in result.evicted}
    assert evicted == {p["metadata"]["uid"] for p in pods}, (
        f"evicted {sorted(map(str, result.evicted))}, expected every pod of Deployment app "
        f"on {node}; attempts: {result.attempts}"
    )
    assert plugin.uid in {p.uid for p in result.left}, (
        f"the driver's plugin pod {plugin.name} was not among the pods left on {node}"
    )
    check(result)  # still there, ready and unrestarted after the last consumer was gone
    for claim in claims:  # deleted only after deallocation (delete-protection finalizer)
        waits.wait_for_deleted(
            lambda c=claim: workload.read_claim(c),
            describe=f"claim {claim} of an evicted pod (deallocated, then deleted with it)",
            timeout=dra_context.timeout("podDeleted"),
        )
    _assert_replacements_elsewhere(dra_context, workload, evicted, node, 2)


@pytest.mark.dra_requirement("DRA-DRAIN-003")
@pytest.mark.dra_node_exclusive(at_least=2)  # drains the node
@pytest.mark.dra_devices("default", count=2)  # the replacements, on other nodes
def test_drain_honours_a_pod_disruption_budget(dra_context, k8s, workload, node_ops, device_lease):
    node = pick_node(dra_context, at_least=2, others_at_least=2, lease=device_lease)
    pods = _deploy_on(workload, node, replicas=2)
    selector = {deployments.APP_LABEL: "app"}
    objects.create(
        k8s,
        workload.build.pod_disruption_budget(
            "app", workload.namespace, match_labels=selector, min_available=1
        ),
    )
    waits.wait_until(
        lambda: (
            k8s.to_dict(
                k8s.policy.read_namespaced_pod_disruption_budget("app", workload.namespace)
            ).get("status")
            or {}
        ),
        lambda s: s.get("disruptionsAllowed") == 1 and s.get("currentHealthy") == 2,
        describe="PodDisruptionBudget app to allow exactly one disruption",
        timeout=dra_context.timeout("default"),
    )

    healthy: list[int] = []

    def sample(progress) -> None:
        pods_now = deployments.deployment_pods(workload, "app")
        healthy.append(sum(1 for p in pods_now if deployments.is_healthy(p)))

    result = node_ops.drain(node, on_progress=sample)
    first, second = sorted(result.evicted, key=lambda p: result.evicted_at(p) or 0)
    assert not result.refusals(first), f"the first eviction was refused: {result.attempts}"
    assert result.refusals(second), (
        f"evicting {second} right after {first} should be refused with HTTP 429 while the "
        f"budget (minAvailable 1) is spent; attempts: {result.attempts}"
    )
    assert min(healthy) >= 1, (
        f"fewer healthy pods than the budget's minAvailable 1 during the drain: {healthy}"
    )
    _assert_replacements_elsewhere(
        dra_context, workload, {p["metadata"]["uid"] for p in pods}, node, 2
    )
