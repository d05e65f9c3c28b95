"""DRA-LIFE-004: across restarts of the driver's kubelet-plugin pod, the node's pools stay
consistent: each pool's generation never goes back, and once the driver is ready again every
pool is complete at its generation, with nothing left from a lower one.

A plugin that starts finds its predecessor's slices. The ResourceSlice controller of
k8s.io/dynamic-resource-allocation (what most drivers use) reads them, keeps those that match
what it would write and otherwise writes the pool at a higher generation, deleting what does not
belong. Consumers read only a pool's highest generation, so a slice left at a lower one is
garbage that comes back as the pool's content the moment the newer slices go, and a generation
that goes back makes the older slices win. The test watches the node's slices of the driver
(leased whole) from before the first restart to the settled state after the second
(slice_watch_checks): two restarts, since a plugin that republished the first
time starts the second from its own slices, not from a fresh install's.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from slice_watch_checks import SliceWatch

from conformance.kube import slices, waits
from conformance.model.outcome import HarnessError
from conformance.model.pool_history import device_names, settled_problems
from conformance.report import record_metric

RESTARTS = 2


@pytest.mark.dra_requirement("DRA-LIFE-004")
@pytest.mark.dra_kubelet_errors("the kubelet cannot reach the restarting plugin")
@pytest.mark.dra_node_exclusive  # restarts the driver's plugin pod of the node
def test_restarts_keep_pools_complete_with_generations_going_forward(
    request, dra_context, k8s, driver_restarts, device_lease
):
    driver, node = dra_context.profile.driver, device_lease.node
    before = device_names(slices.list_slices(k8s, driver, node))
    assert before, f"{driver} publishes no devices for node {node}"
    # A pool already unsettled is not the restarts' doing: judged as such, before any.
    _wait_settled(dra_context, k8s, None, before, "before the restarts", driver, node)
    watch = SliceWatch(k8s, driver, node).start()
    try:
        for restart in range(1, RESTARTS + 1):
            started = time.monotonic()
            old, new = driver_restarts.restart(node)
            when = (
                f"after restart {restart} of {RESTARTS} (plugin pod {old['metadata']['name']} "
                f"replaced by {new['metadata']['name']})"
            )
            _wait_settled(dra_context, k8s, watch, before, when, driver, node)
            record_metric(
                request, "driver_restart_to_pools_settled", time.monotonic() - started, node=node
            )
    finally:
        watch.stop()
    if watch.error:
        raise HarnessError(watch.error)
    assert not watch.history.regressions, (
        f"the generation of {driver}'s pools on {node} went back while slices of them existed "
        f"(consumers read the highest generation): {'; '.join(watch.history.regressions)}\n"
        + _timeline(watch)
    )


def _wait_settled(
    dra_context: Any,
    k8s: Any,
    watch: SliceWatch | None,
    before: set[tuple[str, str]],
    when: str,
    driver: str,
    node: str,
) -> None:
    """Until the node's pools are complete, with nothing stale, the same device names;
    at once when the watch saw a generation go back."""

    def abort(_: Any) -> str | None:
        if watch is None:
            return None
        if watch.error:
            raise HarnessError(watch.error)
        if watch.history.regressions:
            return f"the generation of a pool of {driver} on {node} went back {when}: " + "; ".join(
                watch.history.regressions
            )
        return None

    waits.wait_until(
        lambda: settled_problems(slices.list_slices(k8s, driver, node), before),
        lambda problems: not any(problems.values()),
        describe=f"the pools of {driver} on {node} to settle {when} (complete at "
        "their highest generation, nothing older, the devices of before)",
        timeout=dra_context.timeout("slicesPublished"),
        interval=0.5,
        show=lambda problems: {
            **{check: found for check, found in problems.items() if found},
            "slice changes seen": watch.timeline[-20:] if watch else "(not watched yet)",
        },
        abort=abort,
    )


def _timeline(watch: SliceWatch) -> str:
    return "slice changes seen:\n" + "\n".join(f"  {line}" for line in watch.timeline)
