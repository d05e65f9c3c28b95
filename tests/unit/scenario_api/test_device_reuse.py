"""conformance.scenario_api.device_reuse (its pure parts, and the probe against a fake
workload)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.model.devices import PublishedDevice
from conformance.model.frozen import FrozenMap
from conformance.model.outcome import HarnessError
from conformance.scenario_api.device_reuse import ReuseProbe, holders, unguarded

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


# --- the probe against a fake workload: it must get the released device itself -------------

PROBE_UID = "probe-uid"
RELEASED_UID = "released-uid"
MODEL = f"{DRIVER}/model"


def _device(name: str, model: str = "g1") -> PublishedDevice:
    return PublishedDevice("node-1", name, "node-1", FrozenMap({MODEL: model}))


class FakeWorkload:
    """What `ReuseProbe` uses of `Workloads`. `script` says, read by read, who holds
    node-1/gpu-0 and its look-alike node-1/gpu-1: the probe, a claim of somebody else, or
    nobody (the last entry repeats)."""

    namespace = "t"

    def __init__(self, script: list[str], devices: list[PublishedDevice], guarded: set[str]):
        self.script, self.reads, self.ran, self.created = script, 0, [], []
        self.profile = SimpleNamespace(driver=DRIVER)
        self.context = SimpleNamespace(
            device=lambda i: next((d for d in devices if d.id == i), None),
            devices_of_kind=lambda kind: devices,
            devices=devices,
        )
        lease = SimpleNamespace(guarded=frozenset(guarded))
        self.request = SimpleNamespace(getfixturevalue=lambda name: lease)
        self.k8s = SimpleNamespace(
            resource=SimpleNamespace(
                list_resource_claim_for_all_namespaces=lambda: SimpleNamespace(items=self._claims())
            ),
            to_dict=lambda claim: claim,
        )

    def _holder(self) -> str:
        return self.script[min(self.reads, len(self.script) - 1)]

    def _claims(self) -> list[dict]:
        # somebody else holds the look-alike only: the probe can then never be allocated
        other = _claim("other", "theirs", "u9", (DRIVER, "node-1", "gpu-1"))
        return [other] if self._holder() == "other" else []

    def read_claim(self, name: str) -> dict:
        self.reads += 1
        if self._holder() == "probe":
            both = [(DRIVER, "node-1", "gpu-0"), (DRIVER, "node-1", "gpu-1")]
            return _claim("t", name, PROBE_UID, *both)
        return _claim("t", name, PROBE_UID)

    def timeout(self, name: str) -> float:
        return 0.5

    def ref(self, name: str) -> str:
        return f"t/{name}"

    def device_request(self, kind: str, **kwargs: object) -> dict:
        return {"kind": kind, **kwargs}

    def claim(self, name: str, requests: list) -> None:
        self.created.append(("claim", name, requests))

    def pod(self, name: str, claims: list, node: str | None = None) -> None:
        self.created.append(("pod", name, node))

    def wait_running(self, name: str, abort_on_prepare_failure: bool) -> None:
        self.ran.append(("running", name))

    def assert_sees_exactly(self, name: str, results) -> None:
        self.ran.append(("sees", name, sorted(r.device_id for r in results)))


ALIKE = [_device("gpu-0"), _device("gpu-1"), _device("gpu-2", model="g2")]
BOTH = {"node-1/gpu-0", "node-1/gpu-1"}


def _probe(workload: FakeWorkload) -> ReuseProbe:
    return ReuseProbe.start(workload, "node-1/gpu-0")  # type: ignore[arg-type]


def test_the_probe_asks_for_the_device_and_its_look_alikes_and_proves_the_driver() -> None:
    workload = FakeWorkload(["nobody", "nobody", "probe"], ALIKE, guarded=BOTH | {"x/y"})
    probe = _probe(workload)
    assert probe.wanted == BOTH
    (_, _, [request]), pod = workload.created
    assert request["count"] == 2 and pod == ("pod", "probe", "node-1")
    reallocation = probe.wait_reallocated(released_uids={RELEASED_UID})
    assert sorted(r.device_id for r in reallocation.probe_results) == sorted(BOTH)
    assert workload.ran == [("running", "probe"), ("sees", "probe", sorted(BOTH))]


def test_a_claim_of_somebody_else_on_a_probed_device_is_the_harness_error_not_a_pass() -> None:
    # Under the lease's guard nobody else can be allocated them; if somebody is, nothing was
    # learnt of the driver.
    workload = FakeWorkload(["other"], ALIKE, guarded=BOTH)
    with pytest.raises(HarnessError, match=r"claim\(s\) other/theirs, neither the probe"):
        _probe(workload).wait_reallocated(released_uids={RELEASED_UID})
    assert workload.ran == []


def test_a_probe_whose_devices_the_lease_does_not_guard_is_the_harness_error() -> None:
    workload = FakeWorkload(["nobody"], ALIKE, guarded={"node-1/gpu-0"})
    with pytest.raises(HarnessError, match=r"does not keep \['node-1/gpu-1'\] from other tests"):
        _probe(workload)
    assert workload.created == []
    assert unguarded(BOTH, None) == sorted(BOTH)


def test_one_probe_per_group_of_look_alikes() -> None:
    workload = FakeWorkload(["nobody"], ALIKE, guarded={d.id for d in ALIKE})
    ids = ["node-1/gpu-1", "node-1/gpu-0", "node-1/gpu-2"]
    probes = ReuseProbe.start_each(workload, ids)  # type: ignore[arg-type]
    assert [(p.name, sorted(p.wanted)) for p in probes] == [
        ("probe-0", sorted(BOTH)),
        ("probe-1", ["node-1/gpu-2"]),
    ]
