"""Metrics pages as a v1.37 kubelet and kube-scheduler write them (trimmed to a few buckets)."""

from __future__ import annotations

DRIVER = "gpu.example.com"
V1 = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
V1BETA1 = "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/"
BOUNDS = ("0.01", "0.05", "0.1", "1", "+Inf")


def grpc(driver: str, method: str, code: str, cumulative: tuple[int, ...], total_s: float) -> str:
    """One series of dra_grpc_operations_duration_seconds: buckets, sum and count."""
    labels = f'driver_name="{driver}",grpc_status_code="{code}",method_name="{method}"'
    lines = [
        f'dra_grpc_operations_duration_seconds_bucket{{{labels},le="{le}"}} {n}'
        for le, n in zip(BOUNDS, cumulative, strict=True)
    ]
    lines.append(f"dra_grpc_operations_duration_seconds_sum{{{labels}}} {total_s}")
    lines.append(f"dra_grpc_operations_duration_seconds_count{{{labels}}} {cumulative[-1]}")
    return "\n".join(lines)


def operation(name: str, is_error: str, cumulative: tuple[int, ...], total_s: float) -> str:
    labels = f'is_error="{is_error}",operation_name="{name}"'
    lines = [
        f'dra_operations_duration_seconds_bucket{{{labels},le="{le}"}} {n}'
        for le, n in zip(BOUNDS, cumulative, strict=True)
    ]
    lines.append(f"dra_operations_duration_seconds_sum{{{labels}}} {total_s}")
    lines.append(f"dra_operations_duration_seconds_count{{{labels}}} {cumulative[-1]}")
    return "\n".join(lines)


def kubelet_page(*series: str, claims_in_use: int = 0, started: float | None = None) -> str:
    """A kubelet's /metrics page; `started`: its process_start_time_seconds (absent: None)."""
    process = (
        [
            "# HELP process_start_time_seconds Start time of the process since unix epoch.",
            "# TYPE process_start_time_seconds gauge",
            f"process_start_time_seconds {started}",
        ]
        if started is not None
        else []
    )
    return "\n".join(
        [
            "# HELP apiserver_audit_event_total [ALPHA] Counter of audit events generated.",
            "# TYPE apiserver_audit_event_total counter",
            "apiserver_audit_event_total 0",
            "# HELP dra_grpc_operations_duration_seconds [ALPHA] Duration in seconds of the "
            "DRA gRPC operations",
            "# TYPE dra_grpc_operations_duration_seconds histogram",
            *[s for s in series if s.startswith("dra_grpc")],
            "# HELP dra_operations_duration_seconds [ALPHA] Latency histogram in seconds for "
            "the duration of handling all ResourceClaims referenced by a pod when the pod is "
            "being admitted or removed",
            "# TYPE dra_operations_duration_seconds histogram",
            *[s for s in series if s.startswith("dra_operations")],
            "# HELP dra_resource_claims_in_use [ALPHA] The number of ResourceClaims that are "
            "currently in use on the node, by driver name (driver_name label value) and across "
            "all drivers (special value <any> for driver_name). Note that the sum of all by-driver "
            "counts is not the total number of in-use ResourceClaims because the same "
            "ResourceClaim might use devices from different drivers. Instead, use the count for "
            "the <any> driver_name.",
            "# TYPE dra_resource_claims_in_use gauge",
            f'dra_resource_claims_in_use{{driver_name="<any>"}} {claims_in_use}',
            f'dra_resource_claims_in_use{{driver_name="{DRIVER}"}} {claims_in_use}',
            "# HELP kubelet_running_pods [ALPHA] Number of pods that have a running pod sandbox",
            "# TYPE kubelet_running_pods gauge",
            "kubelet_running_pods 7",
            *process,
        ]
    )


def scheduler_page(prefilter: tuple[int, ...], filter_error: tuple[int, ...]) -> str:
    def series(plugin: str, point: str, status: str, cumulative: tuple[int, ...]) -> list[str]:
        labels = f'extension_point="{point}",plugin="{plugin}",status="{status}"'
        name = "scheduler_plugin_execution_duration_seconds"
        out = [
            f'{name}_bucket{{{labels},le="{le}"}} {n}'
            for le, n in zip(BOUNDS, cumulative, strict=True)
        ]
        return [*out, f"{name}_sum{{{labels}}} 0.5", f"{name}_count{{{labels}}} {cumulative[-1]}"]

    return "\n".join(
        [
            "# HELP scheduler_plugin_execution_duration_seconds [ALPHA] Duration for running a "
            "plugin at a specific extension point.",
            "# TYPE scheduler_plugin_execution_duration_seconds histogram",
            *series("DynamicResources", "PreFilter", "Success", prefilter),
            *series("DynamicResources", "Filter", "Error", filter_error),
            *series("NodeResourcesFit", "Filter", "Success", (9, 9, 9, 9, 9)),
        ]
    )
