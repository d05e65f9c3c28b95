"""DRA-UPD-001: a rolling update of the driver's kubelet-plugin DaemonSet keeps pods with claims
running and seeing their devices, and a pod with a new claim created during the rollout runs.

The update is a pod-template annotation change, plus the profile's second image
(readiness.daemonSet.update) if it names one. The new claim's pod goes to a node whose plugin
pod is being replaced when the test sees one (else to one not updated yet), so its claim waits
for the new plugin. Metrics: per node, the time without a ready plugin pod, when new claims
there could not be prepared (update_plugin_unavailable); and how long that pod took to run
(update_new_claim_to_running), which adds the retries of prepares that failed meanwhile.
"""

from __future__ import annotations

import time

import pytest
from update_checks import (
    assert_survivors_undisturbed,
    check_newcomer,
    restart_survivors,
    run_survivors,
    spare_nodes,
)

from conformance.kube.rollout import RolloutWatch
from conformance.kube.waits import wait_until
from conformance.observe.steps import step
from conformance.report import record_metric


def _node_for_newcomer(watch: RolloutWatch, candidates: list[str], timeout: float) -> str:
    """A candidate node whose plugin pod is being replaced, once the rollout reaches one;
    if the rollout passes them all too fast to see, one not updated yet, else the first."""

    def in_transition(w: RolloutWatch) -> list[str]:
        return [n for n in candidates if n in w.nodes and w.nodes[n].in_transition]

    def pending(w: RolloutWatch) -> list[str]:
        return [n for n in candidates if n in w.nodes and w.nodes[n].ready_at is None]

    seen = wait_until(
        watch.observe,
        lambda w: bool(in_transition(w)) or not pending(w) or w.done,
        describe=f"the rollout to replace the plugin pod of one of {candidates}",
        timeout=timeout,
        interval=0.5,
        show=lambda w: w.summary(),
    )
    return (in_transition(seen) or pending(seen) or candidates)[0]


@pytest.mark.dra_requirement("DRA-UPD-001")
@pytest.mark.dra_kubelet_errors("the kubelet cannot reach the plugin while it is replaced")
# Cluster-wide: the rollout replaces the plugin pod of every node (conftest.py).
@pytest.mark.dra_devices("default", count=2, exclusive=True)
def test_rolling_update_keeps_pods_and_serves_new_claims(
    request, dra_context, k8s, workload, driver_updates
):
    candidates = spare_nodes(dra_context)
    survivors = run_survivors(workload, dra_context)
    image = dra_context.profile.readiness.update_image
    what = "a new pod-template annotation" + (f" and image {image}" if image else "")

    watch = driver_updates.start(what, image=image)
    node = _node_for_newcomer(watch, candidates, dra_context.timeout("driverReady"))
    replacing = watch.nodes[node].in_transition
    workload.claim("newcomer")
    created = time.monotonic()
    with step(
        f"the pod with a new claim goes to node {node}, whose plugin pod is "
        + ("being replaced" if replacing else "not replaced yet")
    ):
        workload.pod("newcomer", ["newcomer"], node=node)
    driver_updates.wait_rolled_out(watch, what)
    record_metric(request, "update_rollout", time.monotonic() - watch.started)
    for name, seen in sorted(watch.nodes.items()):
        if seen.unavailable_s is not None:
            record_metric(request, "update_plugin_unavailable", seen.unavailable_s, node=name)
    replaced = {n for n, s in watch.nodes.items() if s.ready_at is not None}
    missed = sorted({s.node for s in survivors} - replaced)
    assert not missed, f"the rollout did not replace the plugin pod of node(s) {missed}"

    assert_survivors_undisturbed(k8s, workload, survivors)
    restart_survivors(workload, survivors)

    # Last: a prepare refused while the node had no plugin is expected, so it does not end the
    # wait; the kubelet would retry it only at its resync (60-90 s), the wait has it retried
    # every 10 s (conformance.scenario_api.prepare_retry).
    workload.wait_running("newcomer", abort_on_prepare_failure=False)
    record_metric(request, "update_new_claim_to_running", time.monotonic() - created, node=node)
    check_newcomer(k8s, workload, "newcomer", node)
