"""DRA-LOSS-012: a claim deleted while the driver's kubelet plugin was down is unprepared once
the plugin is back, and its device serves a new claim.

The plugin pod of the node is deleted and, once it is gone, the pod holding the claim is
force-deleted with its claim already marked for deletion: the claim leaves the API while no
plugin can unprepare it, and the kubelet keeps retrying. The replacement plugin gets the
unprepare of a claim it did not prepare itself (it knows it from its checkpoint, or not at all)
and of which nothing is left in the API; it must let go of the device. The kubelet's figures on
the node (leased whole) say when it did; a probe claim that only the released device (and its
look-alikes) can satisfy, created while the device is held, must then run and see it.
"""

from __future__ import annotations

import time

import pytest

from conformance.kube import state, waits
from conformance.kube.daemonsets import wait_ready_pod_on_node
from conformance.model.outcome import not_run
from conformance.report import record_metric
from conformance.scenario_api.device_reuse import ReuseProbe
from conformance.scenario_api.kubelet_dra import CLAIMS_IN_USE, KubeletDra, read_kubelet_dra


@pytest.mark.dra_requirement("DRA-LOSS-012")
@pytest.mark.dra_kubelet_errors("the kubelet cannot unprepare while the plugin is down")
@pytest.mark.dra_node_exclusive  # restarts the driver's plugin pod of the node
def test_claim_deleted_while_the_plugin_is_down_is_released_once_it_is_back(
    request, dra_context, k8s, workload, driver_restarts, device_lease
):
    driver, node = dra_context.profile.driver, device_lease.node
    before = read_kubelet_dra(k8s, node, driver)
    if before.claims_in_use is None:
        not_run(
            f"the kubelet of node {node} does not expose {CLAIMS_IN_USE}",
            "run on a Kubernetes version whose kubelet exposes it (1.34 and later)",
        )
    workload.claim("stale")
    workload.run("holder", ["stale"], node=node)
    [held] = workload.results("stale")
    probe = ReuseProbe.start(workload, held.device_id)
    probe.assert_blocked()

    workload.delete_claim("stale")  # delete-protection keeps it while the pod is there
    namespace, name = driver_restarts.namespace, driver_restarts.name
    timeout = dra_context.timeout("driverReady")
    plugin = wait_ready_pod_on_node(k8s, namespace, name, node, timeout=timeout)
    driver_restarts.restarted.append(node)  # the fixture waits for the driver at the end
    k8s.core.delete_namespaced_pod(plugin["metadata"]["name"], namespace)
    waits.wait_until(
        lambda: _pod_uid(k8s, namespace, plugin["metadata"]["name"]),
        lambda uid: uid != plugin["metadata"]["uid"],
        describe=f"the plugin pod {plugin['metadata']['name']} of {node} to be gone",
        timeout=timeout,
        interval=0.5,
    )
    workload.delete_pod("holder", wait=False, grace_period=0)
    started = time.monotonic()
    waits.wait_for_deleted(
        lambda: workload.read_claim("stale"),
        describe=f"ResourceClaim {workload.ref('stale')} (its pod was force-deleted)",
        timeout=workload.timeout("podDeleted"),
    )
    wait_ready_pod_on_node(
        k8s, namespace, name, node, timeout=timeout, not_uid=plugin["metadata"]["uid"]
    )
    # The probe's claim counts in the gauge once its pod runs: a driver that prepares the
    # device again before the stale claim is unprepared (the kubelet retries both) must not
    # hide the stale claim behind the probe's, nor the probe's running pod fail the wait.
    waits.wait_until(
        lambda: (read_kubelet_dra(k8s, node, driver), _running(k8s, workload, probe.name)),
        lambda now: (now[0].claims_in_use or 0) <= (before.claims_in_use or 0) + int(now[1]),
        describe=f"the kubelet on {node} to unprepare the claim deleted while the plugin was "
        f"down ({CLAIMS_IN_USE} back to {before.claims_in_use}, one more once the probe runs)",
        timeout=workload.timeout("podDeleted") + timeout,
        interval=1.0,
        show=_shown,
    )
    record_metric(request, "plugin_down_claim_unprepared", time.monotonic() - started, node=node)
    # The scheduler gave the probe the device as soon as the claim was gone, while the plugin
    # was still down: its first prepares found no plugin registered, which the kubelet retries.
    probe.wait_reallocated(refused_prepares_expected=True)


def _pod_uid(k8s, namespace: str, name: str) -> str | None:
    pod = state.read_pod(k8s, namespace, name)
    return ((pod or {}).get("metadata") or {}).get("uid")


def _running(k8s, workload, name: str) -> bool:
    return state.pod_phase(state.read_pod(k8s, workload.namespace, name)) == "Running"


def _shown(now: tuple[KubeletDra, bool]) -> dict[str, object]:
    dra, probe_running = now
    return {
        "claims in use": dra.claims_in_use,
        "unprepare errors": dra.unprepare_errors,
        "probe running": probe_running,
    }
