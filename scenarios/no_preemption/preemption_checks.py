"""Types and small readers shared by the no-preemption scenarios."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.kube import objects, state, waits
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.model.devices import PublishedDevice
from conformance.run.context import RunContext
from conformance.scenario_api.workloads import Workloads


@dataclass(frozen=True)
class Priorities:
    low: str
    high: str


def contended_devices(context: RunContext, node: str) -> tuple[str, list[PublishedDevice]]:
    """The device kind with the fewest devices on `node` (fewest pods to fill it), and those
    devices: one of the profile's selector kinds, whose devices are disjoint and independent;
    `default` without any."""
    sized = [
        (len(devices), kind, devices)
        for kind in context.profile.selectors
        if (devices := _on_node(context, kind, node))
    ]
    if sized:
        _, kind, devices = min(sized, key=lambda s: (s[0], s[1]))
        return kind, devices
    devices = _on_node(context, "default", node)
    assert devices, (
        f"no device of the default class on node {node} can be worked out from the published "
        "slices, so the test cannot tell how many pods hold them all"
    )
    return "default", devices


def _on_node(context: RunContext, kind: str, node: str) -> list[PublishedDevice]:
    return [d for d in context.devices_of_kind(kind) or () if d.node == node]


@dataclass(frozen=True)
class Contention:
    kind: str
    holders: dict[str, str]  # low-priority pod (= its claim) -> device id it holds
    high: str  # the high-priority pod (= its claim)
    high_created: float  # time.monotonic() when the high-priority pod was created


def establish_contention(
    workload: Workloads, priorities: Priorities, node: str | None
) -> Contention:
    """Every device of one kind on `node` held by a running low-priority pod, and a
    high-priority pod for one device of that kind that the scheduler has found unschedulable;
    every pod is pinned to `node` (the test's node lease). (A plain function, not a fixture:
    a driver that breaks this setup fails the test, not errors it.)"""
    assert node is not None, "the test needs a node lease (@pytest.mark.dra_node_exclusive)"
    kind, devices = contended_devices(workload.context, node)
    holders: dict[str, str] = {}
    for i in range(len(devices)):
        name = f"low-{i}"
        workload.claim(name, kind=kind)
        workload.pod(name, [name], node=node, priority_class_name=priorities.low)
    for name in [f"low-{i}" for i in range(len(devices))]:
        workload.wait_running(name)
        results = workload.results(name)
        assert len(results) == 1, f"claim {name} should hold one device, has {results}"
        holders[name] = results[0].device_id
    assert sorted(holders.values()) == sorted(d.id for d in devices), (
        f"the low-priority pods should hold every {kind} device of {node} "
        f"{sorted(d.id for d in devices)}, hold {sorted(holders.values())}"
    )

    workload.claim("high", kind=kind)
    started = time.monotonic()
    workload.pod("high", ["high"], node=node, priority_class_name=priorities.high)
    waits.wait_for_pod_scheduled_false(
        workload.k8s, workload.namespace, "high", timeout=workload.timeout("claimAllocated")
    )
    return Contention(kind, holders, "high", started)


def disruption_target(pod: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pod's DisruptionTarget=True condition, if it has one."""
    condition = state.pod_condition(pod, "DisruptionTarget")
    return condition if condition and condition.get("status") == "True" else None


def preempted_events(workload: Workloads) -> list[dict[str, Any]]:
    """The scheduler's `Preempted` events about pods of the test namespace."""
    return [
        {k: e.get(k) for k in ("involvedObject", "reason", "message")}
        for e in workload.events("Pod")
        if e.get("reason") == "Preempted"
    ]


def end_pod(workload: Workloads, name: str) -> dict[str, Any]:
    """End a running pod the way a finished batch job does, without deleting it: give it an
    activeDeadlineSeconds it has already exceeded; the kubelet stops it (phase Failed)."""
    workload.k8s.core.patch_namespaced_pod(
        name,
        workload.namespace,
        {"spec": {"activeDeadlineSeconds": 1}},
        field_manager=FIELD_MANAGER,
    )
    return waits.wait_for_pod_phase(
        workload.k8s, workload.namespace, name, "Failed", timeout=workload.timeout("podDeleted")
    )


# --- CPU: the control case (DRA-PREEMPT-003) -------------------------------------------------

HOLD_FINALIZER = "dra-conformance.io/hold-for-inspection"


def cpu_millis(quantity: str | int | float | None) -> int:
    """A CPU quantity (`2`, `1500m`, `0.5`) in millicores."""
    if quantity is None:
        return 0
    text = str(quantity)
    if text.endswith("m"):
        return int(float(text[:-1]))
    return int(round(float(text) * 1000))


def pod_cpu_request(pod: Mapping[str, Any]) -> int:
    """The scheduler's view of a pod's CPU request: max(sum of containers, largest init
    container) plus overhead."""
    spec = pod.get("spec") or {}

    def request(c: Mapping[str, Any]) -> int:
        return cpu_millis(((c.get("resources") or {}).get("requests") or {}).get("cpu"))

    containers = sum(request(c) for c in spec.get("containers") or ())
    init = max((request(c) for c in spec.get("initContainers") or ()), default=0)
    return max(containers, init) + cpu_millis((spec.get("overhead") or {}).get("cpu"))


def free_cpu(workload: Workloads, node: str) -> int:
    """Allocatable CPU of `node` minus the requests of its pods that are not finished."""
    k8s = workload.k8s
    allocatable = cpu_millis(k8s.core.read_node(node).status.allocatable.get("cpu"))
    pods = k8s.core.list_pod_for_all_namespaces(
        field_selector=f"spec.nodeName={node},status.phase!=Succeeded,status.phase!=Failed"
    ).items
    return allocatable - sum(pod_cpu_request(k8s.to_dict(p)) for p in pods)


class HeldPods:
    """Pods created with HOLD_FINALIZER; `release_all` removes it from those still there."""

    def __init__(self, workload: Workloads) -> None:
        self.workload = workload
        self.names: list[str] = []

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        body["metadata"]["finalizers"] = [HOLD_FINALIZER]
        self.names.append(body["metadata"]["name"])
        return objects.create(self.workload.k8s, body)

    def release_all(self) -> None:
        for name in self.names:
            pod = self.workload.read_pod(name)
            finalizers = ((pod or {}).get("metadata") or {}).get("finalizers") or []
            if HOLD_FINALIZER not in finalizers:
                continue
            self.workload.k8s.core.patch_namespaced_pod(
                name,
                self.workload.namespace,
                [
                    {
                        "op": "replace",
                        "path": "/metadata/finalizers",
                        "value": [f for f in finalizers if f != HOLD_FINALIZER],
                    }
                ],
                field_manager=FIELD_MANAGER,
            )
