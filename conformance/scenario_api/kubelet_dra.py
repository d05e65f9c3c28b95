"""What a node's kubelet says of one driver's claims, from one read of its metrics page (through
the API server's node proxy, no pod on the node): its failed unprepares, its gRPC calls to the
driver by method and status code, and how many claims of the driver it holds prepared.

The kubelet counts an unprepare that the driver answered with a per-claim error as an
`UnprepareResources` operation error (`dra_operations_duration_seconds{is_error="true"}`) while
the gRPC call itself is OK; a driver that crashes, times out or is not serving shows as a non-OK
`grpc_status_code` instead. A restarted kubelet (its process start time changed, or a counter
went down) starts its counters at zero: `since` then counts what it did since its restart, and
`through` sums a window over the reads taken around restarts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.kube.client import K8sClients
from conformance.kube.kubelet import kubelet_metrics
from conformance.metrics.histogram import HistogramSeries, merged
from conformance.metrics.increase import START_TOLERANCE_S, started_at
from conformance.metrics.operations import histogram_figures
from conformance.metrics.parse import parse_metrics
from conformance.metrics.scrape import PROCESS_START

GRPC = "dra_grpc_operations_duration_seconds"
OPERATIONS = "dra_operations_duration_seconds"
CLAIMS_IN_USE = "dra_resource_claims_in_use"
UNPREPARE = "UnprepareResources"

Call = tuple[str, str]  # (gRPC method without its service, e.g. NodeUnprepareResources; code)


@dataclass(frozen=True)
class KubeletDra:
    """One read of a kubelet's DRA figures for one driver."""

    node: str
    unprepare_errors: float = 0.0  # failed UnprepareResources operations (any driver)
    calls: Mapping[Call, float] = field(default_factory=dict)  # gRPC calls to the driver
    claims_in_use: float | None = None  # None: this kubelet does not expose the gauge
    # the driver's gRPC call latency per method (every status code): the test's own figures
    latency: Mapping[str, HistogramSeries] = field(default_factory=dict)
    started: float | None = None  # the kubelet's process start time, when it says

    def failed_calls(self) -> dict[Call, float]:
        return {call: n for call, n in self.calls.items() if call[1] not in ("OK", "")}

    def restarted_since(self, start: KubeletDra) -> bool:
        """A later process start time or a counter lower than at the start: the kubelet
        restarted in between."""
        if (
            self.started is not None
            and start.started is not None
            and self.started - start.started > START_TOLERANCE_S
        ):
            return True
        return self.unprepare_errors < start.unprepare_errors or any(
            n < start.calls.get(call, 0.0) for call, n in self.calls.items()
        )

    def through(self, start: KubeletDra, between: Iterable[KubeletDra]) -> KubeletDra:
        """What happened from `start` to this read, summed over the reads `between` (in time
        order): a restart in the window loses only what came between its neighbouring reads."""
        reads = [*between, self]
        total = reads[0].since(start)
        for earlier, read in zip(reads, reads[1:], strict=False):
            total = total.plus(read.since(earlier))
        return total

    def plus(self, later: KubeletDra) -> KubeletDra:
        """Two consecutive windows as one (counters added; the gauge is the later one's)."""
        calls = dict(self.calls)
        for call, n in later.calls.items():
            calls[call] = calls.get(call, 0.0) + n
        latency = dict(self.latency)
        for method, series in later.latency.items():
            both = merged(
                [s for s in (latency.get(method), series) if s is not None], series.labels
            )
            if both is not None:
                latency[method] = both
        return KubeletDra(
            self.node,
            self.unprepare_errors + later.unprepare_errors,
            calls,
            later.claims_in_use,
            latency,
            later.started,
        )

    def since(self, start: KubeletDra) -> KubeletDra:
        """What happened between `start` and this read (counters only; the gauge is now's).
        A counter lower than at the start was reset by a kubelet restart: then all it counted
        since counts."""
        if self.restarted_since(start):
            return self
        calls = {c: n - start.calls.get(c, 0.0) for c, n in self.calls.items()}
        latency = {m: s.minus(start.latency.get(m))[0] for m, s in self.latency.items()}
        return KubeletDra(
            self.node,
            self.unprepare_errors - start.unprepare_errors,
            {c: n for c, n in calls.items() if n > 0},
            self.claims_in_use,
            {m: s for m, s in latency.items() if s.count > 0},
            self.started,
        )

    def count(self, method: str, code: str | None = None) -> int:
        """Calls of `method` (any code when None)."""
        return int(sum(n for (m, c), n in self.calls.items() if m == method and code in (None, c)))


def parse_kubelet_dra(text: str, node: str, driver: str) -> KubeletDra:
    """The figures of `driver` in a kubelet's metrics page (Prometheus text)."""
    parsed = parse_metrics(text, (GRPC, OPERATIONS, CLAIMS_IN_USE, PROCESS_START))
    errors = sum(
        s.count
        for s in parsed.histograms.get(OPERATIONS, [])
        if s.label("operation_name") == UNPREPARE and s.label("is_error") == "true"
    )
    calls: dict[Call, float] = {}
    by_method: dict[str, list[HistogramSeries]] = {}
    for series in parsed.histograms.get(GRPC, []):
        if series.label("driver_name") != driver:
            continue
        # "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources": any API version
        method = series.label("method_name").rsplit("/", 1)[-1]
        key = (method, series.label("grpc_status_code"))
        calls[key] = calls.get(key, 0.0) + series.count
        by_method.setdefault(method, []).append(series)
    latency = {m: merged(s, (("method", m),)) for m, s in by_method.items()}
    gauge = parsed.gauges.get(CLAIMS_IN_USE)
    in_use = (
        None if gauge is None else sum(s.value for s in gauge if s.label("driver_name") == driver)
    )
    return KubeletDra(
        node, errors, calls, in_use, {m: s for m, s in latency.items() if s}, started_at(parsed)
    )


def read_kubelet_dra(k8s: K8sClients, node: str, driver: str) -> KubeletDra:
    return parse_kubelet_dra(kubelet_metrics(k8s, node), node, driver)


def describe_failures(delta: KubeletDra) -> str:
    """One line of what went wrong in `delta`, or "" (e.g. "3 failed UnprepareResources, gRPC
    NodeUnprepareResources Unavailable x2")."""
    parts = []
    if delta.unprepare_errors > 0:
        parts.append(
            f"{int(delta.unprepare_errors)} failed {UNPREPARE} "
            f'(dra_operations_duration_seconds{{operation_name="{UNPREPARE}",is_error="true"}})'
        )
    for (method, code), n in sorted(delta.failed_calls().items()):
        parts.append(f"gRPC {method} {code} x{int(n)} (dra_grpc_operations_duration_seconds)")
    return ", ".join(parts)


def call_figures(deltas: Iterable[KubeletDra]) -> list[dict[str, Any]]:
    """Per gRPC method, over the nodes of `deltas` (one window each): calls, failed calls, the
    mean latency and p95, figured as the run's Driver operations table figures them."""
    deltas = list(deltas)
    rows = []
    for method in sorted({m for d in deltas for m in d.latency}):
        series = merged(d.latency[method] for d in deltas if method in d.latency)
        if series is None or series.count <= 0:
            continue
        errors = sum(n for d in deltas for (m, _), n in d.failed_calls().items() if m == method)
        figures = histogram_figures(series, errors)
        rows.append(
            {
                "method": method,
                "calls": figures["count"],
                "errors": figures["errors"],
                "mean_s": figures["mean_s"],
                "p95": figures["p95"],
                "nodes": sorted(d.node for d in deltas if method in d.latency),
            }
        )
    return rows


def describe_call_figures(rows: list[dict[str, Any]], driver: str, note: str = "") -> str:
    """The figures as a text table (the test's Allure attachment)."""
    lines = [
        f"gRPC calls of the kubelet to {driver} while this test ran "
        f"(dra_grpc_operations_duration_seconds){note}",
        "",
        f"{'method':<28} {'calls':>6} {'errors':>6} {'mean':>10} {'p95':>12}  nodes",
    ]
    for row in rows:
        p95 = row["p95"] or {}
        bound = f"≤ {p95['le']:g} s" if "le" in p95 else f"> {p95.get('gt', 0):g} s"
        lines.append(
            f"{row['method']:<28} {row['calls']:>6} {row['errors']:>6} "
            f"{row['mean_s']:>8.4f} s {bound:>12}  {', '.join(row['nodes'])}"
        )
    lines += ["", "p95 is the upper bound of the histogram bucket holding that rank."]
    return "\n".join(lines) + "\n"
