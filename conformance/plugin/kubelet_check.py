"""The per-test check "where the kubelet sees it": after each scenario test with a namespace,
the kubelets of the nodes it used must show no DRA error the test did not cause on purpose, and
every claim it prepared must be unprepared there before its device lease ends.

A driver whose unprepare fails once the claim object is gone (a force delete) leaves nothing in
the API to see: the pod object is gone, so no event; the claim is gone, so the device looks free;
only the kubelet retries `NodeUnprepareResources` for ever. So, per node the test used (its
leased node, else every node of the driver), from one read of the kubelet's metrics at the start
(`conformance.scenario_api.kubelet_dra`) and one at the end, once the test's pods and claims are
gone from the API:

- failed `UnprepareResources` operations and non-OK gRPC calls to the driver (the deltas);
- `dra_resource_claims_in_use` for the driver against the claims the API still has allocated on
  the node: more in use than allocated means a claim prepared there outlived its object. A
  force-deleted pod's claim is in that state for the seconds the kubelet takes to stop the pod,
  so the end read is retried for a short while (`SETTLE_S`) before it counts;
- the test namespace's `FailedPrepareDynamicResources` / `FailedUnprepareDynamicResources`
  events (read before the namespace goes).

A test that causes such errors on purpose (a prepare fault, a kubelet or driver restart) says so
with `@pytest.mark.dra_kubelet_errors("why")`: then only the claims-in-use part applies. Tests
that cause errors on purpose lease their node whole; on a node shared by several tests an error
is counted against each of them that ended while it showed (the message says so).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from conformance.kube.client import K8sClients
from conformance.metrics.parse import MetricsParseError
from conformance.metrics.scrape import kubelet_source
from conformance.metrics.spool import ReadSpool
from conformance.scenario_api.kubelet_dra import (
    KubeletDra,
    call_figures,
    describe_failures,
    parse_kubelet_dra,
    read_kubelet_dra,
)

EVENT_REASONS = ("FailedPrepareDynamicResources", "FailedUnprepareDynamicResources")
SETTLE_S = 15.0  # a force-deleted pod's claims: the kubelet stops the pod (>= 2 s), unprepares
READ_TIMEOUT_S = 10.0
UNREADABLE = (ApiException, urllib3.exceptions.HTTPError, MetricsParseError, OSError)


def claims_allocated_per_node(k8s: K8sClients, driver: str) -> dict[str, int] | None:
    """Per node, the claims the API has allocated there with a device of `driver` (a claim
    without a node selector counts on every node: it cannot make the check fail). None when
    the claims cannot be listed."""
    try:
        raw = k8s.get_raw("/apis/resource.k8s.io/v1/resourceclaims", timeout=READ_TIMEOUT_S)
    except UNREADABLE:
        return None
    return count_per_node(json.loads(raw).get("items") or [], driver)


def count_per_node(claims: Iterable[Mapping[str, Any]], driver: str) -> dict[str, int]:
    counts: dict[str, int] = {"*": 0}
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        results = (allocation.get("devices") or {}).get("results") or ()
        if not any(r.get("driver") == driver for r in results):
            continue
        nodes = _selected_nodes(allocation.get("nodeSelector") or {})
        for node in nodes or ("*",):
            counts[node] = counts.get(node, 0) + 1
    return counts


def _selected_nodes(selector: Mapping[str, Any]) -> set[str]:
    """The node names an allocation's nodeSelector pins (matchFields metadata.name In)."""
    names: set[str] = set()
    for term in selector.get("nodeSelectorTerms") or ():
        for field_req in term.get("matchFields") or ():
            if field_req.get("key") == "metadata.name" and field_req.get("operator") == "In":
                names.update(field_req.get("values") or ())
    return names


def _excess(read: KubeletDra, allocated: Mapping[str, int] | None) -> float | None:
    """Claims in use on the node beyond those the API has allocated there (> 0: one outlived
    its object); None when either figure is unknown."""
    if read.claims_in_use is None or allocated is None:
        return None
    return read.claims_in_use - allocated.get(read.node, 0) - allocated.get("*", 0)


@dataclass
class KubeletWatch:
    """The start of one test's window on its nodes; `finish` judges the end."""

    k8s: K8sClients
    driver: str
    nodes: tuple[str, ...]
    start: dict[str, KubeletDra] = field(default_factory=dict)
    start_excess: dict[str, float | None] = field(default_factory=dict)
    started: float = 0.0
    deltas: dict[str, KubeletDra] = field(default_factory=dict)  # per node, set by `finish`
    spool: ReadSpool | None = None  # the reads taken around kubelet restarts, run-wide
    began: float = 0.0  # epoch seconds, to pick the spooled reads of this window

    @classmethod
    def begin(
        cls, k8s: K8sClients, driver: str, nodes: Iterable[str], spool: ReadSpool | None = None
    ) -> KubeletWatch:
        watch = cls(
            k8s,
            driver,
            tuple(sorted(set(nodes))),
            started=time.monotonic(),
            spool=spool,
            began=time.time(),
        )
        allocated = claims_allocated_per_node(k8s, driver)
        for node, read in watch._read_all().items():
            watch.start[node] = read
            watch.start_excess[node] = _excess(read, allocated)
        return watch

    def _read_all(self, nodes: tuple[str, ...] | None = None) -> dict[str, KubeletDra]:
        """One read per node (default: the watched ones), side by side; a node that cannot be
        read is left out."""
        nodes = self.nodes if nodes is None else nodes

        def read(node: str) -> KubeletDra | None:
            try:
                return read_kubelet_dra(self.k8s, node, self.driver)
            except UNREADABLE:
                return None

        with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
            found = dict(zip(nodes, pool.map(read, nodes), strict=True))
        return {n: r for n, r in found.items() if r is not None}

    def events(self, namespace: str) -> list[str]:
        """The namespace's prepare/unprepare failure events, one line each."""
        try:
            items = self.k8s.core.list_namespaced_event(
                namespace, field_selector="type=Warning", _request_timeout=READ_TIMEOUT_S
            ).items
        except UNREADABLE:
            return []
        return [
            f"{e.reason} on {e.involved_object.kind.lower()} {e.involved_object.name}: "
            f"{(e.message or '').strip()[:300]}"
            for e in items
            if e.reason in EVENT_REASONS
        ]

    def pod_nodes(self, namespace: str) -> set[str]:
        """The nodes the namespace's pods are on (read before the namespace goes)."""
        try:
            pods = self.k8s.core.list_namespaced_pod(
                namespace, _request_timeout=READ_TIMEOUT_S
            ).items
        except UNREADABLE:
            return set(self.nodes)
        return {p.spec.node_name for p in pods if p.spec and p.spec.node_name}

    def finish(
        self,
        events: list[str],
        errors_expected: bool,
        scale: float = 1.0,
        judged: Iterable[str] | None = None,
    ) -> list[str]:
        """What the kubelets of the `judged` nodes (default: all watched) show that the test
        did not ask for, one line each; waits up to SETTLE_S (scaled) for claims still in use
        beyond the API's. A kubelet that restarted meanwhile (another test's, or this test's,
        which is then marked) counts no error."""
        problems = [] if errors_expected else [f"event {e}" for e in events]
        watched = self.nodes
        self.nodes = tuple(n for n in watched if judged is None or n in set(judged))
        if not self.nodes:  # its pods are gone: nothing to judge, its figures from every node
            self._keep_figures(self._read_all(watched))
            return problems
        deadline = time.monotonic() + SETTLE_S * scale
        while True:
            allocated = claims_allocated_per_node(self.k8s, self.driver)
            reads = self._read_all()
            leaks = self._leaks(reads, allocated)
            if not leaks or time.monotonic() >= deadline:
                break
            time.sleep(1.0)
        self._keep_figures(reads)
        for node, read in sorted(reads.items()):
            start = self.start.get(node)
            if errors_expected or start is None or read.restarted_since(start):
                continue
            failures = describe_failures(read.since(start))
            if failures:
                problems.append(f"the kubelet on node {node} reported {failures}")
        return problems + leaks

    def call_figures(self) -> list[dict[str, Any]]:
        """The driver's gRPC calls on the test's nodes during the window (after `finish`)."""
        return call_figures(self.deltas.values())

    def _keep_figures(self, reads: Mapping[str, KubeletDra]) -> None:
        """The window's deltas on the nodes read at its end, through the reads spooled around
        the kubelet restarts within it (this test's or another's on a shared node)."""
        between = self._spooled_reads()
        self.deltas = {
            n: r.through(self.start[n], between.get(n, ()))
            for n, r in reads.items()
            if n in self.start
        }

    def _spooled_reads(self) -> dict[str, list[KubeletDra]]:
        if self.spool is None:
            return {}
        out: dict[str, list[KubeletDra]] = {}
        now = time.time()  # the end reads were just taken
        for snapshot in sorted(self.spool.snapshots(), key=lambda s: s.taken):
            if not self.began < snapshot.taken < now:
                continue
            for node in self.start:
                text = snapshot.texts.get(kubelet_source(node))
                if text is not None:
                    out.setdefault(node, []).append(parse_kubelet_dra(text, node, self.driver))
        return out

    def _leaks(
        self, reads: Mapping[str, KubeletDra], allocated: Mapping[str, int] | None
    ) -> list[str]:
        leaks = []
        for node, read in sorted(reads.items()):
            now, before = _excess(read, allocated), self.start_excess.get(node)
            if now is None or before is None or now <= max(before, 0.0):
                continue
            start = self.start[node]
            failures = "" if read.restarted_since(start) else describe_failures(read.since(start))
            leaks.append(
                f"the kubelet on node {node} still holds {int(read.claims_in_use or 0)} claim(s) "
                f"of {self.driver} prepared (dra_resource_claims_in_use) while the API has "
                f"only {int(read.claims_in_use or 0) - int(now)} allocated there: "
                f"{int(now - max(before, 0.0))} claim(s) gone from the API were never "
                "unprepared on the node"
                + (f" (its unprepare failures: {failures})" if failures else "")
            )
        return leaks


def verdict(problems: list[str], nodes: tuple[str, ...], shared: bool) -> str:
    """The teardown failure: what the kubelet saw, and whose it may be."""
    note = (
        f" (node {', '.join(nodes)} was shared with other tests: an error there may be theirs)"
        if shared
        else ""
    )
    return f"the kubelet saw DRA failures this test did not cause{note}: " + "; ".join(problems)
