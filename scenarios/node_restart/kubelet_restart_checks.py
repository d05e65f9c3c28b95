"""A kubelet restart the suite causes, proven by the node and measured around it.

The restart command is the profile's or the harness's, and a command can succeed without
restarting anything (a wrong unit name, a wrapper that only deletes the node's slices). The
kubelet's own `process_start_time_seconds` (its /metrics through the API server's node proxy)
is what proves it: read right before, then awaited until it is later. A restart that never
happened is the harness's or the cluster's fault (an error), never a verdict on the driver.

Both reads also go to the run's read spool, so the report's driver-operation totals count what
the kubelet did up to its restart (conformance.metrics.increase).
"""

from __future__ import annotations

from pathlib import Path

from conformance.kube.client import K8sClients
from conformance.kube.waits import WaitTimeout, wait_until
from conformance.metrics.increase import START_TOLERANCE_S, started_at
from conformance.metrics.operations import utc_iso
from conformance.metrics.scrape import Snapshot, kubelet_source, read_kubelets
from conformance.metrics.spool import spool_in
from conformance.model.outcome import HarnessError
from conformance.observe.steps import step


class KubeletStarts:
    """The start time of a node's kubelet before a restart, and the proof it changed."""

    def __init__(self, k8s: K8sClients, harness_dir: Path) -> None:
        self.k8s = k8s
        self.spool = spool_in(harness_dir)

    def before(self, node: str) -> float | None:
        """The kubelet's start time now (None: its metrics cannot be read here)."""
        return self._start_time(self._read(node), node)

    def prove_restarted(
        self, node: str, started_before: float | None, *, how: str, timeout: float
    ) -> None:
        """Wait until the kubelet of `node` started after `started_before`; HarnessError when
        it did not within `timeout`. Without a start time to compare, say so and go on."""
        if started_before is None:
            with step(
                f"the restart of the kubelet of {node} is not proven: its metrics cannot be "
                "read through the node proxy"
            ):
                pass
            return
        describe = (
            f"the kubelet of node {node} to start again (process_start_time_seconds later "
            f"than {utc_iso(started_before)})"
        )
        try:
            wait_until(
                lambda: self._read(node),
                lambda read: (
                    (self._start_time(read, node) or 0.0) > started_before + START_TOLERANCE_S
                ),
                describe=describe,
                timeout=timeout,
                interval=2.0,
                show=lambda read: _shown(read, node),
            )
        except WaitTimeout as exc:
            raise HarnessError(
                f"the kubelet of node {node} did not restart ({how}): a problem of the node "
                f"access or the cluster, not of the driver\n{exc}"
            ) from exc

    def _read(self, node: str) -> Snapshot:
        read = read_kubelets(self.k8s, [node])
        if read.sources:
            self.spool.add(read)
        return read

    @staticmethod
    def _start_time(read: Snapshot, node: str) -> float | None:
        metrics = read.sources.get(kubelet_source(node))
        return started_at(metrics) if metrics is not None else None


def _shown(read: Snapshot, node: str) -> dict[str, str]:
    source = kubelet_source(node)
    if source in read.unavailable:
        return {"kubelet metrics": read.unavailable[source]}
    started = KubeletStarts._start_time(read, node)
    return {"process started": utc_iso(started) if started else "(no process_start_time_seconds)"}
