"""What "keeps running" means: how a pod looked before a disruptive step, and whether it still
does.

A pod is undisturbed when it is the same object (UID), not being deleted, still Running on the
same node with every container ready, not restarted and not replaced (the same
`containerID`), and carries no DisruptionTarget
condition (the mark every eviction path - taint manager, Eviction API, preemption - sets).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.kube import state
from conformance.kube.client import K8sClients
from conformance.kube.waits import ensure_for
from conformance.observe.steps import step

DISRUPTION_TARGET = "DisruptionTarget"


@dataclass(frozen=True)
class PodBaseline:
    namespace: str
    name: str
    uid: str
    node: str
    restarts: Mapping[str, int]  # container -> restartCount
    container_ids: Mapping[str, str] = field(default_factory=dict)  # container -> containerID

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> PodBaseline:
        meta = pod["metadata"]
        return cls(
            meta["namespace"],
            meta["name"],
            meta["uid"],
            (pod.get("spec") or {}).get("nodeName") or "",
            {
                c["name"]: int(c.get("restartCount") or 0)
                for c in (pod.get("status") or {}).get("containerStatuses") or ()
            },
            {
                c["name"]: c.get("containerID") or ""
                for c in (pod.get("status") or {}).get("containerStatuses") or ()
            },
        )


def disturbances(baseline: PodBaseline, pod: Mapping[str, Any] | None) -> list[str]:
    """Why `pod` (read now) is no longer the undisturbed pod of `baseline`; empty if it is."""
    who = f"pod {baseline.namespace}/{baseline.name}"
    if pod is None:
        return [f"{who} is gone"]
    meta = pod.get("metadata") or {}
    if meta.get("uid") != baseline.uid:
        return [f"{who} was replaced (UID {baseline.uid} -> {meta.get('uid')})"]
    problems = []
    if meta.get("deletionTimestamp"):
        problems.append(f"{who} is being deleted (deletionTimestamp {meta['deletionTimestamp']})")
    if state.pod_phase(pod) != "Running":
        problems.append(f"{who} is in phase {state.pod_phase(pod)}, not Running")
    node = (pod.get("spec") or {}).get("nodeName") or ""
    if node != baseline.node:
        problems.append(f"{who} moved from node {baseline.node} to {node}")
    statuses = {c["name"]: c for c in (pod.get("status") or {}).get("containerStatuses") or ()}
    for name, before in baseline.restarts.items():
        now = statuses.get(name) or {}
        if int(now.get("restartCount") or 0) != before:
            problems.append(
                f"{who} container {name} restarted "
                f"(restartCount {before} -> {now.get('restartCount')})"
            )
        elif baseline.container_ids.get(name) and baseline.container_ids[name] != now.get(
            "containerID"
        ):
            problems.append(
                f"{who} container {name} was replaced (containerID "
                f"{baseline.container_ids.get(name)} -> {now.get('containerID')})"
            )
        if not now.get("ready"):
            problems.append(f"{who} container {name} is not ready: {now.get('state')}")
    cond = state.pod_condition(pod, DISRUPTION_TARGET)
    if cond is not None and cond.get("status") == "True":
        problems.append(
            f"{who} has condition {DISRUPTION_TARGET}=True "
            f"(reason {cond.get('reason')}: {cond.get('message')})"
        )
    return problems


def assert_undisturbed(k8s: K8sClients, baselines: Sequence[PodBaseline]) -> None:
    names = ", ".join(f"{b.namespace}/{b.name}" for b in baselines)
    with step(f"check that pod(s) {names} still run undisturbed"):
        problems = [
            p for b in baselines for p in disturbances(b, state.read_pod(k8s, b.namespace, b.name))
        ]
        assert not problems, "; ".join(problems)


def ensure_claim_waits_and_pod_undisturbed(
    k8s: K8sClients,
    namespace: str,
    claim: str,
    baseline: PodBaseline,
    *,
    duration: float,
    while_: str,
) -> None:
    """Assert on every poll for `duration` seconds that `claim` stays unallocated and the pod of
    `baseline` undisturbed: the disruption keeps new allocations off without touching users."""
    ensure_for(
        lambda: (
            state.read_claim(k8s, namespace, claim),
            state.read_pod(k8s, baseline.namespace, baseline.name),
        ),
        lambda seen: not state.is_allocated(seen[0]) and not disturbances(baseline, seen[1]),
        describe=f"claim {claim} to stay unallocated while {while_}, and pod {baseline.name} "
        "to keep running undisturbed",
        duration=duration,
        show=lambda seen: {
            claim: state.claim_summary(seen[0]),
            baseline.name: disturbances(baseline, seen[1]) or state.pod_summary(seen[1]),
        },
    )
