"""The fake driver's control client (fakedriver.client.channel), its round trip through the
driver's parser and status, its fault plug-in, and the DeviceTaintRule injector."""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import pytest
from fakedriver.client.channel import FakeDriverControl
from fakedriver.client.faults import FakeDriverInjector
from fakedriver.controls import FailPrepare, Taint, parse_controls
from fakedriver.status import StatusSink
from kubernetes.client.exceptions import ApiException

from conformance.faults import (
    DeviceRef,
    DeviceTaintRuleInjector,
    FaultInjector,
    FaultKind,
    FaultNotSupported,
)
from conformance.faults.taint_rule import acknowledged
from unit.fakedriver.conftest import DRIVER, NODE, NODE2

NS = "dra-fake-driver"


class FakeCore:
    """The CoreV1Api ConfigMap calls FakeDriverControl uses, with conflicts."""

    def __init__(self) -> None:
        self.maps: dict[str, dict] = {}
        self.rv = 0
        self.conflicts = 0

    def _model(self, body: dict) -> SimpleNamespace:
        return SimpleNamespace(
            data=copy.deepcopy(body.get("data")),
            metadata=SimpleNamespace(resource_version=body["metadata"]["resourceVersion"]),
        )

    def read_namespaced_config_map(self, name, namespace):
        if name not in self.maps:
            raise ApiException(status=404, reason="Not Found")
        return self._model(self.maps[name])

    def _store(self, body):
        self.rv += 1
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(self.rv)
        self.maps[body["metadata"]["name"]] = body
        return self._model(body)

    def create_namespaced_config_map(self, namespace, body):
        if body["metadata"]["name"] in self.maps:
            raise ApiException(status=409, reason="AlreadyExists")
        return self._store(body)

    def replace_namespaced_config_map(self, name, namespace, body):
        if self.conflicts:
            self.conflicts -= 1
            self.rv += 1  # someone else wrote in between
            self.maps[name]["metadata"]["resourceVersion"] = str(self.rv)
            raise ApiException(status=409, reason="Conflict")
        if body["metadata"]["resourceVersion"] != self.maps[name]["metadata"]["resourceVersion"]:
            raise ApiException(status=409, reason="Conflict")
        return self._store(body)

    def data(self) -> dict:
        return self.maps.get("fake-dra-control", {}).get("data") or {}


@pytest.fixture
def core():
    return FakeCore()


@pytest.fixture
def control(core):
    return FakeDriverControl(core)


def test_device_faults_round_trip_into_the_driver_parser(core, control):
    control.set_unhealthy(NODE, "fa80-0", "overheating")
    control.withdraw(NODE, "fa80-1")
    control.add_taint(NODE, "ff16-0", "example.com/maint", "yes", "NoExecute")
    control.add_taint(NODE, "ff16-0", "example.com/maint", "again", "NoExecute")  # replaces
    control.fail_prepare(NODE, "fa80-0", count=2)
    control.fail_prepare(NODE)
    control.delay_prepare(NODE, 1.5)
    parsed = parse_controls(core.data(), NODE)
    assert parsed.errors == ()
    assert (parsed.device("fa80-0").health, parsed.device("fa80-0").health_message) == (
        "Unhealthy",
        "overheating",
    )
    assert parsed.device("fa80-1").withdrawn
    assert parsed.device("ff16-0").taints == (Taint("example.com/maint", "again", "NoExecute"),)
    assert (
        parsed.device("fa80-0").fail_prepare.count == 2 and parsed.device("fa80-0").fail_prepare.id
    )
    assert parsed.fail_prepare.count is None  # always
    assert parsed.prepare_delay_seconds == 1.5
    assert parse_controls(core.data(), NODE2).devices == {}

    control.set_healthy(NODE, "fa80-0")
    control.restore(NODE, "fa80-1")
    control.remove_taint(NODE, "ff16-0", "example.com/maint")
    control.clear_fail_prepare(NODE, "fa80-0")
    control.clear_fail_prepare(NODE)
    control.delay_prepare(NODE, 0)
    assert core.data() == {}  # reverted faults leave nothing behind


def test_fresh_fail_prepare_ids(core, control):
    control.fail_prepare(NODE, count=1)
    first = parse_controls(core.data(), NODE).fail_prepare
    control.fail_prepare(NODE, count=1)
    second = parse_controls(core.data(), NODE).fail_prepare
    assert isinstance(first, FailPrepare) and first.id != second.id


def test_fresh_fail_binding_ids(core, control):
    control.fail_binding(NODE, "fx-0")
    first = parse_controls(core.data(), NODE).device("fx-0").fail_binding
    control.fail_binding(NODE, "fx-0", count=None)
    every = parse_controls(core.data(), NODE).device("fx-0").fail_binding
    assert first is not None and first.count == 1
    assert every is not None and every.count is None and every.id != first.id
    control.clear_fail_binding(NODE, "fx-0")
    assert core.data() == {}


def test_misbehaviours_for_all_nodes_and_overrides(core, control):
    control.set_misbehaviour("noop-unprepare", True)
    assert set(core.data()) == {"_all"}  # "*" is not a valid ConfigMap key
    control.set_misbehaviour("noop-unprepare", False, node=NODE2)
    assert parse_controls(core.data(), NODE).misbehaviours == {"noop-unprepare"}
    assert parse_controls(core.data(), NODE2).misbehaviours == frozenset()
    with pytest.raises(ValueError, match="unknown misbehaviour"):
        control.set_misbehaviour("be-evil", True)
    control.clear()
    assert core.data() == {}


def test_conflicts_are_retried(core, control):
    control.withdraw(NODE, "fa80-0")
    core.conflicts = 2
    control.withdraw(NODE, "fa80-1")
    assert parse_controls(core.data(), NODE).device("fa80-1").withdrawn
    assert parse_controls(core.data(), NODE).device("fa80-0").withdrawn


class CoreStatusSink(StatusSink):
    """The driver's status, written where FakeDriverControl reads it."""

    def __init__(self, core: FakeCore, node: str) -> None:
        self.core, self.node = core, node

    def write(self, document):
        name = f"fake-dra-status-{self.node}"
        body = {"metadata": {"name": name}, "data": {"status.json": json.dumps(document)}}
        self.core.maps.pop(name, None)
        self.core._store(body)


def test_wait_applied_through_a_real_driver(harness, core, control):
    harness.sink = CoreStatusSink(core, NODE)
    driver = harness.start()
    control.withdraw(NODE, "fa80-1")
    with pytest.raises(TimeoutError, match="did not apply"):
        control.wait_applied(NODE, timeout=0.2, interval=0.05)
    # What the watch would deliver:
    driver.apply_controls(core.data(), control.last_resource_version)
    driver.status.flush()
    status = control.wait_applied(
        NODE, timeout=30, predicate=lambda s: "fa80-1" not in s["pool"]["publishedDevices"]
    )
    assert status["applied"]["devices"] == {"fa80-1": {"withdrawn": True}}
    assert control.applied(NODE2) is None


def test_fake_driver_injector_restores_on_exit(core, control):
    device = DeviceRef(DRIVER, NODE, "fa80-0")
    with FakeDriverInjector(control, wait=False) as injector:
        assert isinstance(injector, FaultInjector)
        assert all(injector.supports(kind) for kind in FaultKind)
        injector.withdraw(device)
        injector.taint(device, "k.io/x", effect="NoSchedule")
        injector.mark_unhealthy(device)
        injector.fail_prepare(NODE, device, count=1)
        injector.delay_prepare(NODE, 2)
        injector.fail_binding(DeviceRef(DRIVER, NODE, "fx-0"), count=2)
        parsed = parse_controls(core.data(), NODE)
        fail_binding = parsed.device("fx-0").fail_binding
        assert fail_binding is not None and fail_binding.count == 2
        assert parsed.device("fa80-0").withdrawn and parsed.device("fa80-0").taints
        assert parsed.device("fa80-0").health == "Unhealthy"
        assert parsed.prepare_delay_seconds == 2
        injector.recover(device)
        assert parse_controls(core.data(), NODE).device("fa80-0").health is None
    assert core.data() == {}


class FakeCustom:
    def __init__(self) -> None:
        self.rules: dict[str, dict] = {}
        self.calls: list[tuple] = []
        self.stalled = False

    def create_cluster_custom_object(self, group, version, plural, body, field_manager=None):
        assert field_manager == "dra-conformance"
        self.calls.append(("create", group, version, plural))
        self.rules[body["metadata"]["name"]] = body
        return body

    def get_cluster_custom_object(self, group, version, plural, name):
        # What kube-controller-manager's device-taint controller leaves on a processed rule
        # (reason OtherEffect for NoSchedule), unless this stand-in plays a stalled controller.
        rule = {**self.rules[name], "metadata": {**self.rules[name]["metadata"], "generation": 1}}
        if not self.stalled:
            rule["status"] = {
                "conditions": [
                    {"type": "EvictionInProgress", "status": "False", "observedGeneration": 1}
                ]
            }
        return rule

    def delete_cluster_custom_object(self, group, version, plural, name):
        self.calls.append(("delete", group, version, plural))
        if name not in self.rules:
            raise ApiException(status=404, reason="Not Found")
        del self.rules[name]


def test_device_taint_rule_injector():
    custom = FakeCustom()
    device = DeviceRef("gpu.example.com", "node-a", "gpu-3")
    with DeviceTaintRuleInjector(custom, run_id="Run_42") as injector:
        assert isinstance(injector, FaultInjector)
        assert injector.supports(FaultKind.TAINT) and not injector.supports(FaultKind.WITHDRAW)
        injector.taint(device, "example.com/broken", "true", "NoExecute")
        ((name, rule),) = custom.rules.items()
        assert name.startswith("dra-conformance-run-42-")
        assert rule == {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceTaintRule",
            "metadata": {"name": name, "labels": {"dra-conformance.io/run": "Run_42"}},
            "spec": {
                "deviceSelector": {
                    "driver": "gpu.example.com",
                    "pool": "node-a",
                    "device": "gpu-3",
                },
                "taint": {"key": "example.com/broken", "value": "true", "effect": "NoExecute"},
            },
        }
        with pytest.raises(FaultNotSupported):
            injector.mark_unhealthy(device)
        with pytest.raises(ValueError):
            injector.taint(device, "k", effect="PreferNoSchedule")
        injector.taint(device, "example.com/other")
        injector.untaint(device, "example.com/broken")
        assert [r["spec"]["taint"]["key"] for r in custom.rules.values()] == ["example.com/other"]
    assert custom.rules == {}
    assert {c[1:] for c in custom.calls} == {("resource.k8s.io", "v1", "devicetaintrules")}


def test_a_taint_waits_until_the_control_plane_processed_the_rule() -> None:
    custom = FakeCustom()
    custom.stalled = True
    injector = DeviceTaintRuleInjector(custom, run_id="r1", acknowledge_timeout=1.5)
    with pytest.raises(AssertionError) as failed:
        injector.taint(DeviceRef("d", "p", "x"), "k")
    message = str(failed.value)
    assert "EvictionInProgress" in message and "timed out" in message
    assert "'metadata.generation': 1" in message or "metadata.generation: 1" in message


def test_acknowledged_needs_the_condition_for_the_current_generation() -> None:
    rule = {
        "metadata": {"generation": 2},
        "status": {"conditions": [{"type": "EvictionInProgress", "observedGeneration": 1}]},
    }
    assert not acknowledged(rule)
    rule["status"]["conditions"][0]["observedGeneration"] = 2
    assert acknowledged(rule)
    assert not acknowledged({"metadata": {"generation": 1}})


def test_device_taint_rule_injector_uses_the_served_version():
    custom = FakeCustom()
    injector = DeviceTaintRuleInjector(custom, run_id="r1", api_version="v1beta2")
    injector.taint(DeviceRef("d", "p", "x"), "k")
    assert next(iter(custom.rules.values()))["apiVersion"] == "resource.k8s.io/v1beta2"
    injector.restore()
    assert custom.rules == {}
