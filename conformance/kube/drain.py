"""Cordon, drain and uncordon a node the way `kubectl drain` does: through the Eviction API.

- `cordon` sets spec.unschedulable and labels the node `CORDONED_BY_LABEL=<run id>`; the label is
  the registry the end-of-run sweep (cleanup.sweep_run) uncordons from, so a node stays cordoned
  no longer than the run even when a worker is killed. The annotation `CORDONED_BY_PID_ANNOTATION`
  names the process, so an interrupted worker uncordons its own nodes at once. A node that was
  already cordoned before the test is neither labelled nor uncordoned by us.
- `drain` cordons, then evicts every pod on the node except mirror pods and DaemonSet pods
  (kubectl's --ignore-daemonsets: a DaemonSet pod tolerates the unschedulable taint and would
  come straight back, and a DRA driver's kubelet plugin has to stay until its consumers are
  unprepared - "drain the driver last"). HTTP 429 is a PodDisruptionBudget saying "not now":
  retried, like kubectl, until the deadline. Then it waits until every evicted pod is gone.
- Cordon, uncordon, drain and each pod's first eviction are Allure steps; a drain attaches its
  eviction attempts (conformance.observe.steps).
- `cordoned(...)` is the context manager tests use: it always uncordons, also on failure and
  Ctrl-C (KeyboardInterrupt runs `finally`).

`namespaces` narrows a drain to some namespaces. A drain of a whole node would also evict pods of
other tests running at the same time in other runs against the same cluster; the DRA behaviour
(eviction, PodDisruptionBudgets, unprepare, replacement) is the same for the pods it evicts.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

import tenacity
from kubernetes.client.exceptions import ApiException

from conformance.kube.client import K8sClients
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.kube.waits import render_state
from conformance.model.naming import CORDONED_BY_LABEL
from conformance.observe.steps import attach_yaml, step

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# Beside CORDONED_BY_LABEL: the process that cordoned, so an interrupted xdist worker uncordons
# the nodes its own test cordoned and no other worker's.
CORDONED_BY_PID_ANNOTATION = "dra-conformance.io/cordoned-by-pid"
EVICTION_RETRY_SECONDS = 1.0  # kubectl waits 5 s; a test wants to see the budget open sooner


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class EvictionAttempt:
    pod: PodRef
    status: int  # 201 evicted, 429 refused by a PodDisruptionBudget, 404 already gone
    at: float  # time.time()
    message: str = ""


@dataclass
class DrainResult:
    node: str
    attempts: list[EvictionAttempt] = field(default_factory=list)
    evicted: list[PodRef] = field(default_factory=list)
    gone_at: dict[PodRef, float] = field(default_factory=dict)  # pod -> time.time() seen gone
    left: list[PodRef] = field(default_factory=list)  # DaemonSet / mirror pods not evicted

    def refusals(self, pod: PodRef | None = None) -> list[EvictionAttempt]:
        return [a for a in self.attempts if a.status == 429 and (pod is None or a.pod == pod)]

    def evicted_at(self, pod: PodRef) -> float | None:
        return next((a.at for a in self.attempts if a.pod == pod and a.status == 201), None)


class DrainError(AssertionError):
    """The drain did not complete (an assertion failure of the test that asked for it)."""


# --- cordon -----------------------------------------------------------------------------------


def _node(k8s: K8sClients, node: str) -> dict[str, Any]:
    return k8s.to_dict(k8s.core.read_node(node))


def is_cordoned(k8s: K8sClients, node: str) -> bool:
    return bool((_node(k8s, node).get("spec") or {}).get("unschedulable"))


def cordon(k8s: K8sClients, node: str, run_id: str) -> bool:
    """Mark the node unschedulable; False if it already was (then it is not ours to undo)."""
    if is_cordoned(k8s, node):
        return False
    with step(f"cordon node {node}"):
        # Label first: a crash between the two patches must still leave the node findable.
        record = {
            "labels": {CORDONED_BY_LABEL: run_id},
            "annotations": {CORDONED_BY_PID_ANNOTATION: str(os.getpid())},
        }
        k8s.core.patch_node(node, {"metadata": record}, field_manager=FIELD_MANAGER)
        k8s.core.patch_node(node, {"spec": {"unschedulable": True}}, field_manager=FIELD_MANAGER)
        return True


def uncordon(k8s: K8sClients, node: str) -> None:
    with step(f"uncordon node {node}"):
        try:
            k8s.core.patch_node(
                node,
                {
                    "spec": {"unschedulable": False},
                    "metadata": {
                        "labels": {CORDONED_BY_LABEL: None},
                        "annotations": {CORDONED_BY_PID_ANNOTATION: None},
                    },
                },
                field_manager=FIELD_MANAGER,
            )
        except ApiException as exc:
            if exc.status != 404:  # a deleted node has nothing left to uncordon
                raise


@contextlib.contextmanager
def cordoned(k8s: K8sClients, node: str, run_id: str) -> Iterator[bool]:
    """Cordon for the duration of the block; uncordon afterwards unless it was already
    cordoned. Yields whether we cordoned it."""
    ours = cordon(k8s, node, run_id)
    try:
        yield ours
    finally:
        if ours:
            uncordon(k8s, node)


# --- drain ------------------------------------------------------------------------------------


def _ref(pod: dict[str, Any]) -> PodRef:
    meta = pod["metadata"]
    return PodRef(meta["namespace"], meta["name"], meta["uid"])


def is_daemonset_pod(pod: dict[str, Any]) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return any(o.get("kind") == "DaemonSet" and o.get("controller") for o in owners)


def is_mirror_pod(pod: dict[str, Any]) -> bool:
    return MIRROR_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def _finished(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pods_on_node(k8s: K8sClients, node: str) -> list[dict[str, Any]]:
    listing = k8s.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}")
    return [k8s.to_dict(p) for p in listing.items]


def _evict(k8s: K8sClients, pod: PodRef) -> EvictionAttempt:
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
        # Refuse to evict a namesake that replaced the pod we listed.
        "deleteOptions": {"preconditions": {"uid": pod.uid}},
    }
    try:
        k8s.core.create_namespaced_pod_eviction(
            pod.name, pod.namespace, body, field_manager=FIELD_MANAGER
        )
    except ApiException as exc:
        if exc.status in (404, 409, 429):  # gone / UID changed / budget refuses for now
            return EvictionAttempt(pod, exc.status, time.time(), str(exc.body or exc.reason))
        raise
    return EvictionAttempt(pod, 201, time.time())


def _evict_step(k8s: K8sClients, pod: PodRef, *, first: bool) -> EvictionAttempt:
    """A pod's first eviction is a step; the retries a budget causes (one a second) are in the
    drain's attachment."""
    if not first:
        return _evict(k8s, pod)
    with step(f"evict pod {pod}"):
        return _evict(k8s, pod)


def _gone(k8s: K8sClients, pod: PodRef) -> bool:
    try:
        current = k8s.core.read_namespaced_pod(pod.name, pod.namespace)
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return current.metadata.uid != pod.uid


def drain(
    k8s: K8sClients,
    node: str,
    *,
    run_id: str,
    timeout: float,
    namespaces: Iterable[str] | None = None,
    on_progress: Callable[[DrainResult], None] | None = None,
    retry_interval: float = EVICTION_RETRY_SECONDS,
) -> DrainResult:
    """Cordon `node` and evict its pods (see the module docstring); returns what happened.

    The caller uncordons (use `cordoned(...)` around it, or the sweep does at the end of the
    run). `namespaces` limits which pods are evicted; `result.left` lists the DaemonSet and
    mirror pods of every namespace. `on_progress` is called after every round, e.g. to sample
    what a budget protects or to stop early (by raising).
    Raises DrainError when pods are still there at the deadline.
    """
    namespaces = None if namespaces is None else list(namespaces)  # read twice below
    where = "" if namespaces is None else f" (pods of namespace(s) {', '.join(namespaces)})"
    with step(f"drain node {node}{where}"):
        result = DrainResult(node)
        try:
            return _drain(
                k8s, node, result, run_id, timeout, namespaces, on_progress, retry_interval
            )
        finally:
            attach_yaml(f"eviction attempts on node {node}", lambda: _attempts_view(result))


def _attempts_view(result: DrainResult) -> dict[str, Any]:
    return {
        "evicted": [str(p) for p in result.evicted],
        "left (DaemonSet and mirror pods)": [str(p) for p in result.left],
        "attempts": [
            {"pod": str(a.pod), "status": a.status, "at": a.at, "message": a.message[:300]}
            for a in result.attempts
        ],
    }


def _drain(
    k8s: K8sClients,
    node: str,
    result: DrainResult,
    run_id: str,
    timeout: float,
    namespaces: Iterable[str] | None,
    on_progress: Callable[[DrainResult], None] | None,
    retry_interval: float,
) -> DrainResult:
    cordon(k8s, node, run_id)
    wanted = None if namespaces is None else set(namespaces)
    pending: list[PodRef] = []
    for pod in pods_on_node(k8s, node):
        if is_daemonset_pod(pod) or is_mirror_pod(pod):
            result.left.append(_ref(pod))
        elif not _finished(pod) and (wanted is None or pod["metadata"]["namespace"] in wanted):
            pending.append(_ref(pod))
    waiting: list[PodRef] = []  # evicted, not yet gone

    def one_round() -> bool:
        """Evict what is pending, note what is gone; True while pods are left."""
        for pod in list(pending):
            attempt = _evict_step(k8s, pod, first=not any(a.pod == pod for a in result.attempts))
            result.attempts.append(attempt)
            if attempt.status == 201:
                result.evicted.append(pod)
                waiting.append(pod)
            if attempt.status != 429:
                pending.remove(pod)
        for pod in list(waiting):
            if _gone(k8s, pod):
                result.gone_at[pod] = time.time()
                waiting.remove(pod)
        if on_progress is not None:
            on_progress(result)
        return bool(pending or waiting)

    def stuck(_: tenacity.RetryCallState) -> NoReturn:
        raise DrainError(_stuck(k8s, node, pending, waiting, result, timeout))

    if pending:
        # Rounds until no pod is left; an error (or on_progress raising) ends it at once.
        tenacity.Retrying(
            stop=tenacity.stop_after_delay(timeout),
            wait=tenacity.wait_fixed(retry_interval),
            retry=tenacity.retry_if_result(bool),
            retry_error_callback=stuck,
        )(one_round)
    return result


def _stuck(
    k8s: K8sClients,
    node: str,
    pending: list[PodRef],
    waiting: list[PodRef],
    result: DrainResult,
    timeout: float,
) -> str:
    lines = [f"draining node {node} did not finish within {timeout:.0f}s"]
    if pending:
        last = {a.pod: a for a in result.attempts}
        lines.append(
            "still refused by a PodDisruptionBudget (HTTP 429): "
            + "; ".join(f"{p} ({last[p].message[:300]})" for p in pending)
        )
    for pod in waiting:
        try:
            current = k8s.to_dict(k8s.core.read_namespaced_pod(pod.name, pod.namespace))
        except ApiException as exc:
            current = f"unreadable: {exc.status} {exc.reason}"
        summary = current
        if isinstance(current, dict):
            status = current.get("status") or {}
            summary = {
                "deletionTimestamp": current["metadata"].get("deletionTimestamp"),
                "phase": status.get("phase"),
                "containerStatuses": [
                    {"name": c.get("name"), "state": c.get("state")}
                    for c in status.get("containerStatuses") or ()
                ],
            }
        lines.append(f"evicted but still present: {pod}:\n{render_state(summary)}")
    return "\n".join(lines)
