"""How many DRA gRPC calls a kubelet made to a driver, from one read of its metrics."""

from __future__ import annotations

from conformance.metrics.parse import parse_metrics
from conformance.metrics.scrape import GRPC


def dra_grpc_calls(metrics_text: str, driver: str, method: str, status: str = "OK") -> int:
    """The kubelet's count of gRPC calls to `driver` of `method` (e.g. `NodeUnprepareResources`,
    any API version) that ended with gRPC `status`, from its
    `dra_grpc_operations_duration_seconds` histogram."""
    total = 0.0
    for series in parse_metrics(metrics_text, (GRPC,)).histograms.get(GRPC, []):
        if (
            series.label("driver_name") == driver
            and series.label("method_name").endswith("/" + method)
            and series.label("grpc_status_code") == status
        ):
            total += series.count
    return int(total)
