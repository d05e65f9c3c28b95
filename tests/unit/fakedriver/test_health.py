"""The DRAResourceHealth stream (v1 and v1alpha1) reacting to faults."""

from __future__ import annotations

import json
import time

import grpc
import pytest
from fakedriver.grpcapi import (
    drahealth_v1_pb2,
    drahealth_v1_pb2_grpc,
    drahealth_v1alpha1_pb2,
    drahealth_v1alpha1_pb2_grpc,
)

from unit.fakedriver.conftest import NODE

STREAMS = [
    (drahealth_v1_pb2, drahealth_v1_pb2_grpc),
    (drahealth_v1alpha1_pb2, drahealth_v1alpha1_pb2_grpc),
]


def _state(response):
    return {
        d.device.device_name: (d.device.pool_name, d.health, d.message) for d in response.devices
    }


def _first_state(stream, wanted):
    """The first reported state that ``wanted`` accepts, or the last one seen.

    The stream also repeats the current state periodically, so a test waits for
    the state it expects rather than taking the next report after a change.
    """
    state: dict = {}
    try:
        for response in stream:
            state = _state(response)
            if wanted(state):
                break
    except grpc.RpcError as error:
        if error.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
            raise
    return state


@pytest.mark.parametrize(("pb2", "pb2_grpc"), STREAMS)
def test_unhealthy_fault_reaches_the_stream(harness, pb2, pb2_grpc):
    driver = harness.start()
    stub = pb2_grpc.DRAResourceHealthStub(harness.channel(driver))
    # the stream's deadline only bounds a test that fails: each wait below ends on the state
    stream = stub.NodeWatchResources(pb2.NodeWatchResourcesRequest(), timeout=60)
    first = next(stream)
    assert _state(first) == {
        name: (NODE, pb2.HEALTHY, "") for name in ("fa80-0", "fa80-1", "ff16-0", "fs32-0", "fx-0")
    }
    assert all(d.health_check_timeout_seconds == 30 for d in first.devices)
    assert all(abs(d.last_updated_time - time.time()) < 60 for d in first.devices)

    driver.apply_controls(
        {
            NODE: json.dumps(
                {"devices": {"fa80-1": {"health": "Unhealthy", "healthMessage": "ecc"}}}
            )
        },
        "2",
    )
    state = _first_state(stream, lambda s: s["fa80-1"][1] == pb2.UNHEALTHY)
    assert state["fa80-1"] == (NODE, pb2.UNHEALTHY, "ecc")
    assert state["fa80-0"][1] == pb2.HEALTHY

    driver.apply_controls({NODE: json.dumps({"devices": {"fa80-1": {"withdrawn": True}}})}, "3")
    state = _first_state(stream, lambda s: s["fa80-1"][2] != "ecc")
    assert state["fa80-1"] == (NODE, pb2.UNHEALTHY, "withdrawn from the ResourceSlice")
    stream.cancel()


def test_reports_repeat_without_changes(harness):
    driver = harness.start(health_interval=0.2)
    stub = drahealth_v1_pb2_grpc.DRAResourceHealthStub(harness.channel(driver))
    # A stream that reports only changes never gets past the first report (DEADLINE_EXCEEDED)
    stream = stub.NodeWatchResources(drahealth_v1_pb2.NodeWatchResourcesRequest(), timeout=60)
    started = time.monotonic()
    reports = [next(stream) for _ in range(3)]
    # every 0.2 s as configured (0.4 s for three), not every 10 s as by default (20 s): the
    # bound leaves a loaded machine plenty
    assert time.monotonic() - started < 10
    assert all(len(r.devices) == 5 for r in reports)
    stream.cancel()


def test_no_health_reports_misbehaviour(harness):
    controls = {"_all": json.dumps({"misbehaviours": ["no-health-reports"]})}
    driver = harness.start(controls=controls, health_interval=0.2)
    stub = drahealth_v1_pb2_grpc.DRAResourceHealthStub(harness.channel(driver))
    received = []
    with pytest.raises(grpc.RpcError) as info:
        for response in stub.NodeWatchResources(
            drahealth_v1_pb2.NodeWatchResourcesRequest(), timeout=1.0
        ):
            received.append(response)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert received == []


def test_health_service_can_be_disabled(harness):
    driver = harness.start(health_versions=())
    stub = drahealth_v1_pb2_grpc.DRAResourceHealthStub(harness.channel(driver))
    with pytest.raises(grpc.RpcError) as info:
        next(stub.NodeWatchResources(drahealth_v1_pb2.NodeWatchResourcesRequest(), timeout=60))
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
