"""The generated kubelet gRPC modules plus the service strings used in registration.

The stubs come from ``python -m fakedriver.protogen``; they are never committed.
"""

from __future__ import annotations

try:
    from fakedriver._gen import (
        dra_v1_pb2,
        dra_v1_pb2_grpc,
        dra_v1beta1_pb2,
        dra_v1beta1_pb2_grpc,
        drahealth_v1_pb2,
        drahealth_v1_pb2_grpc,
        drahealth_v1alpha1_pb2,
        drahealth_v1alpha1_pb2_grpc,
        pluginregistration_v1_pb2,
        pluginregistration_v1_pb2_grpc,
    )
except ImportError as exc:  # pragma: no cover - only without generated stubs
    raise ImportError(
        "fakedriver gRPC stubs are missing: run `python -m fakedriver.protogen` "
        "(needs grpcio-tools) from drivers/fake"
    ) from exc

PLUGIN_TYPE = "DRAPlugin"

# "<proto package version>.<service>" as the kubelet expects in
# PluginInfo.supported_versions (kubelet cm/dra/plugin/dra_plugin.go). The
# kubelet takes the first DRA entry it knows, so the newest comes first.
DRA_SERVICES: dict[str, str] = {"v1": "v1.DRAPlugin", "v1beta1": "v1beta1.DRAPlugin"}
HEALTH_SERVICES: dict[str, str] = {
    "v1": "v1.DRAResourceHealth",
    "v1alpha1": "v1alpha1.DRAResourceHealth",
}

__all__ = [
    "DRA_SERVICES",
    "HEALTH_SERVICES",
    "PLUGIN_TYPE",
    "dra_v1_pb2",
    "dra_v1_pb2_grpc",
    "dra_v1beta1_pb2",
    "dra_v1beta1_pb2_grpc",
    "drahealth_v1_pb2",
    "drahealth_v1_pb2_grpc",
    "drahealth_v1alpha1_pb2",
    "drahealth_v1alpha1_pb2_grpc",
    "pluginregistration_v1_pb2",
    "pluginregistration_v1_pb2_grpc",
]
