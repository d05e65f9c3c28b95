"""DRA-LIFE-002: a prepare racing the unprepare of a gracefully deleted pod's claim gets the
device whole.

In v1.37.2 the kubelet stops a gracefully deleted pod's containers, calls NodeUnprepareResources
and only then reports the pod's terminal phase (SyncTerminatingPod; its status manager holds
the phase back while the pod might still need an unprepare). The claim controller frees a
claim only once its pod is terminal or gone (isPodDone), so the scheduler can hand the device
to a waiting pod, and the kubelet prepare it for that pod's claim, within a second or two of
the driver answering the unprepare - and not before. What a driver controls is that the answer
is true: a driver that acknowledges the unprepare while the device is still being released
(an asynchronous reset) meets the new prepare on a half-released device.

So the test deletes a pod (default grace period) while a pod whose claim only that device can
satisfy is created (`ReuseProbe`), and checks that the new pod runs and sees exactly its device
(the profile's identity check) and that the kubelet on the node it leased whole (its counters
are this test's alone) had unprepared the old claim before the new pod started. The new pod is
the next round's old one: three rounds, since a race may go right by chance.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest

from conformance.kube import state, waits
from conformance.kube.client import K8sClients
from conformance.report import record_metric
from conformance.scenario_api.device_reuse import ReuseProbe
from conformance.scenario_api.kubelet_dra import KubeletDra, describe_failures, read_kubelet_dra
from conformance.scenario_api.workloads import Workloads

ROUNDS = 3
UNPREPARE = "NodeUnprepareResources"


def _unprepared(now: KubeletDra, before: KubeletDra) -> bool:
    """A NodeUnprepareResources call the driver answered without a per-claim error since
    `before` (the kubelet counts such an error as a failed UnprepareResources operation under
    an OK gRPC call)."""
    since = now.since(before)
    return since.count(UNPREPARE, "OK") - since.unprepare_errors >= 1


@pytest.mark.dra_requirement("DRA-LIFE-002")
@pytest.mark.dra_node_exclusive  # the kubelet's counters are this test's alone; guards the probe
def test_prepare_racing_unprepare_gets_the_device_whole(
    request: pytest.FixtureRequest, workload: Workloads, k8s: K8sClients, device_lease
) -> None:
    node = device_lease.node
    workload.claim("first")
    workload.run("first", ["first"], node=node)
    results = workload.results("first")
    assert len(results) == 1, (
        f"claim {workload.ref('first')} asks for one device and should have one allocation "
        f"result, has {results}"
    )
    device = results[0].device_id
    old = "first"  # the pod (and its claim) to delete; later rounds delete the last probe
    for n in range(1, ROUNDS + 1):
        probe = ReuseProbe.start(workload, device, name=f"probe-{n}")
        _race(request, workload, k8s, node, old, probe, f"round {n} of {ROUNDS}")
        old = probe.name


def _race(
    request: pytest.FixtureRequest,
    workload: Workloads,
    k8s: K8sClients,
    node: str,
    old: str,
    probe: ReuseProbe,
    label: str,
) -> None:
    driver = workload.profile.driver
    old_uid = ((workload.read_claim(old) or {}).get("metadata") or {}).get("uid", "")
    before = read_kubelet_dra(k8s, node, driver)
    workload.delete_pod(old, wait=False)  # graceful: the kubelet stops it, then unprepares
    deleted = time.monotonic()
    still_prepared_at = time.time()  # the latest moment the kubelet was seen not to have let go

    def observe() -> dict[str, Any]:
        nonlocal still_prepared_at
        started = state.container_start_times(workload.read_pod(probe.name))
        read_at = time.time()
        now = read_kubelet_dra(k8s, node, driver)  # read after the pod: proves the order
        done = _unprepared(now, before)
        if not done:
            still_prepared_at = read_at
        return {
            "probe started": sorted(started),
            "unprepared": done,
            "failures": describe_failures(now.since(before)),
        }

    def too_early(seen: dict[str, Any]) -> str | None:
        if seen["probe started"] and not seen["unprepared"]:
            return (
                f"{label}: pod {probe.name} (claim pinned to {probe.device.id}) started "
                f"containers {seen['probe started']} before the kubelet on {node} had "
                f"unprepared claim {workload.ref(old)} of gracefully deleted pod {old} "
                f"(no successful {UNPREPARE} since the delete; {seen['failures'] or 'no errors'})"
            )
        return None

    waits.wait_until(
        observe,
        lambda seen: seen["unprepared"],
        describe=f"{label}: the kubelet on {node} to unprepare claim {workload.ref(old)} of "
        f"gracefully deleted pod {old}",
        timeout=workload.timeout("podDeleted"),
        interval=0.2,
        abort=too_early,
    )
    try:
        probe.wait_reallocated(released_uids={old_uid})
    except AssertionError as exc:
        _explain_half_released(workload, node, old, probe, label, exc)
        raise
    record_metric(request, "graceful_delete_to_reused", time.monotonic() - deleted, node=node)
    early = state.containers_started_before(workload.read_pod(probe.name), still_prepared_at)
    assert not early, (
        f"{label}: pod {probe.name} started containers {sorted(early)} at "
        f"{[datetime.fromtimestamp(t).isoformat() for t in early.values()]}, before the kubelet "
        f"on {node} had unprepared claim {workload.ref(old)} of gracefully deleted pod {old} "
        f"(still prepared at {datetime.fromtimestamp(still_prepared_at).isoformat()})"
    )


def _explain_half_released(
    workload: Workloads, node: str, old: str, probe: ReuseProbe, label: str, exc: AssertionError
) -> None:
    """A probe that runs but does not see its device got one the driver had not finished
    releasing: say so (other failures of the probe keep their own message)."""
    pod = workload.read_pod(probe.name)
    if not state.pod_is_ready(pod):
        return
    results = workload.results(probe.name)
    view = workload.view(probe.name, results)
    if view.exact:
        return
    raise AssertionError(
        f"{label}: {view.explain(f'pod {workload.ref(probe.name)}')}, though the kubelet on "
        f"{node} had unprepared claim {workload.ref(old)} of gracefully deleted pod {old} "
        f"before it prepared the probe's claim: {workload.profile.driver} answered the "
        f"unprepare before device {probe.device.id} was released, or prepared it for the new "
        "claim on a half-released device"
    ) from exc
