"""DRA-UPD-002: an update whose new plugin pod cannot start leaves pods with claims undisturbed,
and rolling it back (the previous pod template) lets new claims be prepared again.

The broken update sets an image no node has, with imagePullPolicy Never: the kubelet never
pulls it (waiting reason ErrImageNeverPull, v1.37.2 pkg/kubelet/images/types.go), whatever the
driver, registry or network. With maxUnavailable the controller stops at the first such pod.
"""

from __future__ import annotations

import pytest
from update_checks import (
    assert_survivors_undisturbed,
    check_newcomer,
    run_survivors,
    spare_nodes,
)

from conformance.kube import state
from conformance.kube.rollout import RolloutWatch
from conformance.kube.waits import ensure_for, wait_until
from conformance.scenario_api.disruption import disturbances

NEVER_PULLED = "dra-conformance.invalid/never-pulled:unpullable"
NEVER_PULL = "ErrImageNeverPull"


def _failed_nodes(watch: RolloutWatch) -> list[str]:
    """Nodes with a new plugin pod whose container waits with ErrImageNeverPull."""
    nodes = []
    for pod in watch.pods:
        if pod["metadata"]["uid"] in {s.old_uid for s in watch.nodes.values()}:
            continue
        for status in (pod.get("status") or {}).get("containerStatuses") or ():
            if ((status.get("state") or {}).get("waiting") or {}).get("reason") == NEVER_PULL:
                nodes.append(pod["spec"]["nodeName"])
    return sorted(set(nodes))


@pytest.mark.dra_requirement("DRA-UPD-002")
@pytest.mark.dra_kubelet_errors("the kubelet cannot reach the plugin while it is replaced")
# Cluster-wide: the update (and its rollback) replaces plugin pods on any node (conftest.py).
@pytest.mark.dra_devices("default", count=2, exclusive=True)
def test_failed_update_leaves_pods_and_rollback_serves_new_claims(
    dra_context, k8s, workload, driver_updates
):
    candidates = spare_nodes(dra_context)
    survivors = run_survivors(workload, dra_context)

    what = f"image {NEVER_PULLED} with imagePullPolicy Never"
    watch = driver_updates.start(what, image=NEVER_PULLED, pull_policy="Never")
    seen = wait_until(
        watch.observe,
        lambda w: bool(_failed_nodes(w)),
        describe=f"a new plugin pod waiting with reason {NEVER_PULL}",
        timeout=dra_context.timeout("driverReady"),
        interval=0.5,
        show=lambda w: w.summary(),
    )
    node = _failed_nodes(seen)[0]
    # While the update is stuck, the pods that hold claims must not notice.
    baselines = [s.baseline for s in survivors]
    ensure_for(
        lambda: [disturbances(b, state.read_pod(k8s, b.namespace, b.name)) for b in baselines],
        lambda problems: not any(problems),
        describe=f"the pods with claims to run undisturbed while the update is stuck on {node}",
        duration=dra_context.timeout("settle"),
        show=lambda problems: [p for ps in problems for p in ps],
    )

    driver_updates.restore()
    assert_survivors_undisturbed(k8s, workload, survivors)
    target = node if node in candidates else candidates[0]
    workload.claim("newcomer")
    # Refusals from before the rollback completed are retried by the kubelet.
    workload.run("newcomer", ["newcomer"], node=target, abort_on_prepare_failure=False)
    check_newcomer(k8s, workload, "newcomer", target)
