"""conformance.scenario_api.device_reuse (its pure parts, and the probe's wait against a fake
workload) and conformance.kube.kubelet."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.kube.kubelet import dra_grpc_calls
from conformance.kube.waits import WaitAborted
from conformance.model.devices import PublishedDevice
from conformance.model.outcome import HarnessError
from conformance.scenario_api.device_reuse import ReuseProbe, holders

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


# --- the probe's wait when other tests' claims take the released device ---------------------

PROBE_UID = "probe-uid"
RELEASED_UID = "released-uid"
TIMEOUTS = {"claimAllocated": 0.2, "podDeleted": 0.2, "podRunning": 0.2}


class FakeWorkload:
    """What `ReuseProbe` reads of its workload; `script` says, read by read, who holds
    gpu-0: the probe, another test's claim, or nobody (the last entry repeats)."""

    namespace = "t"

    def __init__(self, script: list[str]) -> None:
        self.profile = SimpleNamespace(driver=DRIVER)
        self.script, self.reads, self.ran = script, 0, []
        self.k8s = SimpleNamespace(
            resource=SimpleNamespace(
                list_resource_claim_for_all_namespaces=lambda: SimpleNamespace(items=self._claims())
            ),
            to_dict=lambda claim: claim,
        )

    def _holder(self) -> str:
        return self.script[min(self.reads, len(self.script) - 1)]

    def _claims(self) -> list[dict]:
        other = _claim("other", "theirs", "u9", (DRIVER, "node-1", "gpu-0"))
        return [other] if self._holder() == "other" else []

    def read_claim(self, name: str) -> dict:
        self.reads += 1
        if self._holder() == "probe":
            return _claim("t", name, PROBE_UID, (DRIVER, "node-1", "gpu-0"))
        return _claim("t", name, PROBE_UID)

    def timeout(self, name: str) -> float:
        return TIMEOUTS[name]

    def wait_running(self, name: str, abort_on_prepare_failure: bool) -> None:
        self.ran.append(("running", name))

    def assert_sees_exactly(self, name: str, results) -> None:
        self.ran.append(("sees", name, [r.device_id for r in results]))


def probe_of(workload: FakeWorkload) -> ReuseProbe:
    device = PublishedDevice("node-1", "gpu-0", "node-1")
    return ReuseProbe(workload, "probe", device, frozenset({device.id}))  # type: ignore[arg-type]


def test_the_probe_waits_out_another_tests_claim_and_checks_the_driver() -> None:
    # Another test's claim takes the released device first, then lets it go to the probe: the
    # probe must still run and see the device (the driver's preparation is what is proved).
    workload = FakeWorkload(["other", "other", "other", "probe"])
    reallocation = probe_of(workload).wait_reallocated(released_uids={RELEASED_UID})
    assert [r.device_id for r in reallocation.probe_results] == ["node-1/gpu-0"]
    assert workload.ran == [("running", "probe"), ("sees", "probe", ["node-1/gpu-0"])]


def test_a_device_other_tests_keep_is_the_harness_error_naming_them() -> None:
    workload = FakeWorkload(["other"])
    with pytest.raises(HarnessError, match=r"claims of other tests \(other/theirs\) held"):
        probe_of(workload).wait_reallocated(released_uids={RELEASED_UID})
    assert workload.ran == []


def test_a_free_device_the_probe_never_gets_fails_the_driver() -> None:
    workload = FakeWorkload(["nobody"])
    with pytest.raises(WaitAborted, match="no other claim has held"):
        probe_of(workload).wait_reallocated(released_uids={RELEASED_UID})
