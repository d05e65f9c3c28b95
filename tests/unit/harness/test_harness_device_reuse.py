"""Pure parts of conformance.scenario_api.device_reuse and conformance.kube.kubelet."""

from __future__ import annotations

from conformance.kube.kubelet import dra_grpc_calls
from conformance.scenario_api.device_reuse import holders

DRIVER = "gpu.example.com"


def _claim(ns: str, name: str, uid: str, *devices: tuple[str, str, str]) -> dict:
    results = [{"request": "r", "driver": d, "pool": p, "device": n} for d, p, n in devices]
    status = {"allocation": {"devices": {"results": results}}} if results else {}
    return {"metadata": {"namespace": ns, "name": name, "uid": uid}, "status": status}


def test_holders_finds_claims_allocated_the_device() -> None:
    claims = [
        _claim("a", "one", "u1", (DRIVER, "node-1", "gpu-0")),
        _claim("b", "two", "u2", (DRIVER, "node-1", "gpu-1"), (DRIVER, "node-2", "gpu-0")),
        _claim("c", "three", "u3", ("other.example.com", "node-1", "gpu-0")),
        _claim("d", "four", "u4"),
    ]
    assert holders(claims, DRIVER, "node-1/gpu-0") == [("a", "one", "u1")]
    assert holders(claims, DRIVER, "node-2/gpu-0") == [("b", "two", "u2")]
    assert holders(claims, DRIVER, "node-3/gpu-0") == []


V1 = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
V1BETA1 = "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/"


def _line(suffix: str, driver: str, code: str, method: str, value: int, le: str = "") -> str:
    labels = f'driver_name="{driver}",grpc_status_code="{code}",method_name="{method}"'
    if le:
        labels += f',le="{le}"'
    return f"dra_grpc_operations_duration_seconds_{suffix}{{{labels}}} {value}"


METRICS = "\n".join(
    [
        "# TYPE dra_grpc_operations_duration_seconds histogram",
        _line("bucket", DRIVER, "OK", V1 + "NodeUnprepareResources", 3, le="0.1"),
        _line("count", DRIVER, "OK", V1 + "NodeUnprepareResources", 3),
        _line("count", DRIVER, "OK", V1BETA1 + "NodeUnprepareResources", 2),
        _line("count", DRIVER, "Unknown", V1 + "NodeUnprepareResources", 7),
        _line("count", DRIVER, "OK", V1 + "NodePrepareResources", 11),
        _line("count", "other.example.com", "OK", V1 + "NodeUnprepareResources", 5),
    ]
)


def test_dra_grpc_calls_counts_one_method_of_one_driver() -> None:
    assert dra_grpc_calls(METRICS, DRIVER, "NodeUnprepareResources") == 5
    assert dra_grpc_calls(METRICS, DRIVER, "NodeUnprepareResources", "Unknown") == 7
    assert dra_grpc_calls(METRICS, DRIVER, "NodePrepareResources") == 11
    assert dra_grpc_calls(METRICS, "other.example.com", "NodeUnprepareResources") == 5
    assert dra_grpc_calls("", DRIVER, "NodeUnprepareResources") == 0
