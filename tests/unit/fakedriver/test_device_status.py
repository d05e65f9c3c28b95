"""The fake driver's status.devices: the entries it builds (well-formed by the suite's own
checks), the apply it sends, and when it writes (a fresh prepare; never under the
no-device-status misbehaviour; a failed write does not fail the prepare)."""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from fakedriver.checkpoint import PreparedClaim, PreparedDevice
from fakedriver.device_status import (
    APPLY_PATCH,
    ApiClaimStatusWriter,
    apply_body,
    device_entries,
    network_data,
)
from fakedriver.grpcapi import dra_v1_pb2, dra_v1_pb2_grpc

from conformance.model.device_status import entry_problems, missing_entries
from unit.fakedriver.conftest import DRIVER, NODE, make_claim

UID = "5f0c8b0e-7b7a-4a37-9a51-3b0c2f1e0a11"
SHARE = "6a1d2c3b-0000-4000-8000-000000000001"
NOW = "2026-01-02T03:04:05Z"


def _prepared(*devices: PreparedDevice) -> PreparedClaim:
    return PreparedClaim(UID, "test-ns", "claim", devices, cdi_spec="/x.json")


def _device(name: str, share: str | None = None) -> PreparedDevice:
    return PreparedDevice(("req",), NODE, name, (f"{DRIVER}/device={UID}-{name}",), share)


def test_one_well_formed_entry_per_prepared_device(catalog) -> None:
    claim = _prepared(_device("fa80-0"), _device("fa80-0"), _device("fs32-0", SHARE))
    inventory = catalog.for_node(NODE).by_name()
    entries = device_entries(DRIVER, claim, inventory, NODE, NOW)
    assert [(e["device"], e.get("shareID")) for e in entries] == [
        ("fa80-0", None),
        ("fs32-0", SHARE),
    ]
    first = entries[0]
    assert first["conditions"] == [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Prepared",
            "message": f"prepared on node {NODE}",
            "lastTransitionTime": NOW,
        }
    ]
    assert first["data"]["model"] == inventory["fa80-0"].model
    # What the suite judges: every allocated device has a well-formed entry.
    results = [
        {"driver": DRIVER, "pool": NODE, "device": "fa80-0", "request": "req"},
        {"driver": DRIVER, "pool": NODE, "device": "fs32-0", "request": "req", "shareID": SHARE},
    ]
    judged = {
        "status": {"allocation": {"devices": {"results": results}}, "devices": entries},
    }
    assert entry_problems(judged, DRIVER) == []
    assert missing_entries(judged, DRIVER) == []


def test_network_data_is_stable_and_in_the_api_limits() -> None:
    data = network_data(NODE, "fa80-0")
    assert data == network_data(NODE, "fa80-0")
    assert data != network_data(NODE, "fa80-1")
    assert len(data["interfaceName"]) <= 15
    (ip,) = data["ips"]
    assert ipaddress.ip_interface(ip) in ipaddress.ip_network("192.0.2.0/24")
    assert "/" in ip
    assert re.fullmatch(r"02(:[0-9a-f]{2}){5}", data["hardwareAddress"])


def test_the_apply_names_the_claim_and_its_uid() -> None:
    calls: list[dict[str, Any]] = []

    class Rest:
        def request(self, method, path, query=None, body=None, content_type=""):
            calls.append(dict(method=method, path=path, query=query, body=body, type=content_type))
            return {}

    claim = _prepared(_device("fa80-0"))
    entries = [{"driver": DRIVER, "pool": NODE, "device": "fa80-0"}]
    ApiClaimStatusWriter(Rest(), field_manager=DRIVER).apply(claim, entries)  # type: ignore[arg-type]
    (call,) = calls
    assert call["method"] == "PATCH" and call["type"] == APPLY_PATCH
    assert call["path"] == "/apis/resource.k8s.io/v1/namespaces/test-ns/resourceclaims/claim/status"
    assert call["query"] == {"fieldManager": DRIVER, "force": True}
    assert json.loads(call["body"]) == apply_body(claim, entries)
    assert apply_body(claim, entries)["metadata"]["uid"] == UID


def _prepare(harness, driver, uid: str = UID) -> dra_v1_pb2.NodePrepareResourcesResponse:
    stub = dra_v1_pb2_grpc.DRAPluginStub(harness.channel(driver))
    request = dra_v1_pb2.NodePrepareResourcesRequest(
        claims=[dra_v1_pb2.Claim(namespace="test-ns", uid=uid, name=f"claim-{uid}")]
    )
    return stub.NodePrepareResources(request, timeout=60)


def test_a_fresh_prepare_writes_the_status_once(harness) -> None:
    driver = harness.start()
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    assert _prepare(harness, driver).claims[UID].error == ""
    assert _prepare(harness, driver).claims[UID].error == ""  # answered from the checkpoint
    ((claim, entries),) = harness.claim_status.applied
    assert claim.uid == UID and [e["device"] for e in entries] == ["fa80-0"]


def test_misbehaviour_no_device_status_writes_nothing(harness) -> None:
    driver = harness.start(controls={"_all": '{"misbehaviours": ["no-device-status"]}'})
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    assert _prepare(harness, driver).claims[UID].error == ""
    assert harness.claim_status.applied == []


def test_a_failed_status_write_does_not_fail_the_prepare(harness) -> None:
    harness.claim_status.fail = True
    driver = harness.start()
    harness.claims.add(make_claim(UID, [{"device": "fa80-0"}]))
    result = _prepare(harness, driver).claims[UID]
    assert result.error == "" and [d.device_name for d in result.devices] == ["fa80-0"]
    assert driver.device_status is not None and driver.device_status.failed == 1
