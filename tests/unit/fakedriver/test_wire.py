"""Wire identity of the kubelet APIs: names and field numbers the kubelet uses,
and a request encoded by hand (not by our stubs) answered over a real socket."""

from __future__ import annotations

import grpc
from fakedriver.grpcapi import (
    dra_v1_pb2,
    dra_v1beta1_pb2,
    drahealth_v1_pb2,
    drahealth_v1alpha1_pb2,
    pluginregistration_v1_pb2,
)

from unit.fakedriver.conftest import NODE, make_claim


def _fields(message) -> dict[str, int]:
    return {f.name: f.number for f in message.DESCRIPTOR.fields}


def test_service_full_names_match_the_kubelet_clients():
    assert dra_v1_pb2.DESCRIPTOR.services_by_name["DRAPlugin"].full_name == (
        "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
    )
    assert dra_v1beta1_pb2.DESCRIPTOR.services_by_name["DRAPlugin"].full_name == (
        "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"
    )
    assert drahealth_v1_pb2.DESCRIPTOR.services_by_name["DRAResourceHealth"].full_name == (
        "v1.DRAResourceHealth"
    )
    assert drahealth_v1alpha1_pb2.DESCRIPTOR.services_by_name["DRAResourceHealth"].full_name == (
        "v1alpha1.DRAResourceHealth"
    )
    registration = pluginregistration_v1_pb2.DESCRIPTOR.services_by_name["Registration"]
    assert registration.full_name == "pluginregistration.Registration"
    assert [m.name for m in registration.methods] == ["GetInfo", "NotifyRegistrationStatus"]


def test_field_numbers():
    assert _fields(dra_v1_pb2.Claim) == {"namespace": 1, "uid": 2, "name": 3}
    assert _fields(dra_v1_pb2.Device) == {
        "request_names": 1,
        "pool_name": 2,
        "device_name": 3,
        "cdi_device_ids": 4,
        "share_id": 5,
    }
    assert "share_id" not in _fields(dra_v1beta1_pb2.Device)
    assert _fields(dra_v1_pb2.NodePrepareResourceResponse) == {"devices": 1, "error": 2}
    assert _fields(dra_v1_pb2.NodeUnprepareResourceResponse) == {"error": 1}
    assert _fields(pluginregistration_v1_pb2.PluginInfo) == {
        "type": 1,
        "name": 2,
        "endpoint": 3,
        "supported_versions": 4,
    }
    assert _fields(pluginregistration_v1_pb2.RegistrationStatus) == {
        "plugin_registered": 1,
        "error": 2,
    }
    for pb2 in (drahealth_v1_pb2, drahealth_v1alpha1_pb2):
        assert _fields(pb2.DeviceHealth) == {
            "device": 1,
            "health": 2,
            "last_updated_time": 3,
            "health_check_timeout_seconds": 4,
            "message": 5,
        }
        assert _fields(pb2.DeviceIdentifier) == {"pool_name": 1, "device_name": 2}
        assert (pb2.UNKNOWN, pb2.HEALTHY, pb2.UNHEALTHY) == (0, 1, 2)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def test_hand_encoded_prepare_request_is_understood(harness):
    driver = harness.start()
    uid = "0b8ad8a0-0000-4000-8000-000000000001"
    harness.claims.add(make_claim(uid, [{"device": "fa80-0"}], name="c1", namespace="ns1"))
    claim = _field(1, b"ns1") + _field(2, uid.encode()) + _field(3, b"c1")
    request = _field(1, claim)  # NodePrepareResourcesRequest.claims = 1
    call = harness.channel(driver).unary_unary(
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"
    )
    raw = call(request, timeout=60)
    response = dra_v1_pb2.NodePrepareResourcesResponse.FromString(raw)
    device = response.claims[uid].devices[0]
    assert (device.pool_name, device.device_name) == (NODE, "fa80-0")
    # The response bytes carry the device name under Device field 3.
    assert _field(3, b"fa80-0") in raw


def test_unknown_method_is_unimplemented(harness):
    driver = harness.start()
    call = harness.channel(driver).unary_unary("/k8s.io.kubelet.pkg.apis.dra.v2.DRAPlugin/Nope")
    try:
        call(b"", timeout=60)
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.UNIMPLEMENTED
    else:
        raise AssertionError("an unknown service must not answer")
