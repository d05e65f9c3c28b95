"""Readers of cluster state, as plain camelCase dicts and small typed records.

Readers return None for a missing object (404) instead of raising, so waits can show
"not found" as the last state seen. Parsers are pure functions, tested without a cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from conformance.kube.builders import (
    COMMAND_BEGIN,
    COMMAND_END,
    ENV_BEGIN,
    ENV_END,
    FILE_BEGIN,
    FILE_END,
)
from conformance.kube.client import K8sClients


def read_or_none(k8s: K8sClients, call: Callable[..., Any], *args: Any) -> dict[str, Any] | None:
    try:
        return k8s.to_dict(call(*args))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def read_claim(k8s: K8sClients, namespace: str, name: str) -> dict[str, Any] | None:
    return read_or_none(k8s, k8s.resource.read_namespaced_resource_claim, name, namespace)


def read_pod(k8s: K8sClients, namespace: str, name: str) -> dict[str, Any] | None:
    return read_or_none(k8s, k8s.core.read_namespaced_pod, name, namespace)


def read_namespace(k8s: K8sClients, name: str) -> dict[str, Any] | None:
    return read_or_none(k8s, k8s.core.read_namespace, name)


# --- claims ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AllocationResult:
    request: str  # `<request>` or `<request>/<subrequest>`
    driver: str
    pool: str
    device: str
    admin_access: bool = False
    tolerations: tuple[Mapping[str, Any], ...] = ()
    share_id: str | None = None  # DRAConsumableCapacity: one share of a shareable device
    consumed_capacity: Mapping[str, str] = field(default_factory=dict)  # name -> quantity

    @property
    def device_id(self) -> str:
        return f"{self.pool}/{self.device}"


@dataclass(frozen=True)
class ConsumerRef:
    resource: str
    name: str
    uid: str
    api_group: str = ""


def allocation_results(claim: Mapping[str, Any]) -> list[AllocationResult]:
    """status.allocation.devices.results[] (empty when not allocated)."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [
        AllocationResult(
            request=r["request"],
            driver=r["driver"],
            pool=r["pool"],
            device=r["device"],
            admin_access=bool(r.get("adminAccess")),
            tolerations=tuple(r.get("tolerations") or ()),
            share_id=r.get("shareID"),
            consumed_capacity=dict(r.get("consumedCapacity") or {}),
        )
        for r in (allocation.get("devices") or {}).get("results") or ()
    ]


def is_allocated(claim: Mapping[str, Any] | None) -> bool:
    return bool(claim and (claim.get("status") or {}).get("allocation"))


def reserved_for(claim: Mapping[str, Any]) -> list[ConsumerRef]:
    return [
        ConsumerRef(
            r.get("resource", ""), r.get("name", ""), r.get("uid", ""), r.get("apiGroup", "") or ""
        )
        for r in (claim.get("status") or {}).get("reservedFor") or ()
    ]


# --- pods -----------------------------------------------------------------------------------


def pod_condition(pod: Mapping[str, Any], condition_type: str) -> dict[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == condition_type:
            return dict(cond)
    return None


def pod_is_ready(pod: Mapping[str, Any] | None) -> bool:
    """Ready and not being deleted: a pod that serves."""
    if not pod or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    cond = pod_condition(pod, "Ready")
    return bool(cond and cond.get("status") == "True")


def pod_phase(pod: Mapping[str, Any] | None) -> str | None:
    return None if pod is None else (pod.get("status") or {}).get("phase")


def container_start_times(pod: Mapping[str, Any] | None) -> dict[str, float]:
    """Epoch seconds at which each container of `pod` started (running or already exited);
    startedAt has whole seconds."""
    starts: dict[str, float] = {}
    for status in ((pod or {}).get("status") or {}).get("containerStatuses") or ():
        state = status.get("state") or {}
        started = (state.get("running") or state.get("terminated") or {}).get("startedAt")
        if started:
            starts[status["name"]] = datetime.fromisoformat(started).timestamp()
    return starts


def containers_started_before(pod: Mapping[str, Any] | None, moment: float) -> dict[str, float]:
    """The containers of `pod` that surely started before epoch second `moment`: startedAt has
    whole seconds, so only a start over a second before it counts."""
    return {n: t for n, t in container_start_times(pod).items() if t + 1 < moment}


@dataclass(frozen=True)
class WorkloadOutput:
    """What the workload container printed: its environment and the profile's file/command."""

    env: Mapping[str, str]
    file: str | None = None
    command: str | None = None


def _last_block(lines: list[str], begin: str, end: str) -> list[str] | None:
    """The last complete begin..end block; a restarted container prints it again."""
    block: list[str] | None = None
    current: list[str] | None = None
    for line in lines:
        if line == begin:
            current = []
        elif line == end and current is not None:
            block, current = current, None
        elif current is not None:
            current.append(line)
    return block


def parse_workload_output(log: str) -> WorkloadOutput:
    lines = log.splitlines()
    env_lines = _last_block(lines, ENV_BEGIN, ENV_END)
    if env_lines is None:
        raise ValueError(
            f"no complete '{ENV_BEGIN}' .. '{ENV_END}' block in the container log "
            f"(is it the workload image and command?); log starts: {log[:200]!r}"
        )
    env: dict[str, str] = {}
    for line in env_lines:
        name, sep, value = line.partition("=")
        if sep and name:  # continuation lines of multi-line values have no usable name
            env[name] = value
    file_lines = _last_block(lines, FILE_BEGIN, FILE_END)
    command_lines = _last_block(lines, COMMAND_BEGIN, COMMAND_END)
    return WorkloadOutput(
        env=env,
        file="\n".join(file_lines) if file_lines is not None else None,
        command="\n".join(command_lines) if command_lines is not None else None,
    )


def pod_workload_output(
    k8s: K8sClients, namespace: str, pod: str, container: str = "main", *, previous: bool = False
) -> WorkloadOutput:
    log = k8s.core.read_namespaced_pod_log(pod, namespace, container=container, previous=previous)
    return parse_workload_output(log)


# --- events ---------------------------------------------------------------------------------


def _event_time(event: Mapping[str, Any]) -> str:
    return (
        event.get("lastTimestamp")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def events_for(
    k8s: K8sClients, namespace: str, *, kind: str | None = None, name: str | None = None
) -> list[dict[str, Any]]:
    """core/v1 Events of the namespace (optionally about one object), oldest first."""
    selectors = []
    if kind:
        selectors.append(f"involvedObject.kind={kind}")
    if name:
        selectors.append(f"involvedObject.name={name}")
    events = k8s.core.list_namespaced_event(namespace, field_selector=",".join(selectors) or None)
    return sorted((k8s.to_dict(e) for e in events.items), key=_event_time)


# --- compact views for "last state seen" ------------------------------------------------------


def claim_summary(claim: Mapping[str, Any] | None) -> Any:
    if claim is None:
        return "not found"
    meta = claim.get("metadata") or {}
    return {
        "deletionTimestamp": meta.get("deletionTimestamp"),
        "finalizers": meta.get("finalizers"),
        "status": claim.get("status") or {},
    }


def pod_summary(pod: Mapping[str, Any] | None) -> Any:
    if pod is None:
        return "not found"
    status = pod.get("status") or {}
    return {
        "nodeName": (pod.get("spec") or {}).get("nodeName"),
        "phase": status.get("phase"),
        "reason": status.get("reason"),
        "message": status.get("message"),
        "containerStatuses": [
            {
                "name": c.get("name"),
                "ready": c.get("ready"),
                "restartCount": c.get("restartCount"),
                "state": c.get("state"),
                **(
                    {"allocatedResourcesStatus": c["allocatedResourcesStatus"]}
                    if c.get("allocatedResourcesStatus")
                    else {}
                ),
            }
            for c in status.get("containerStatuses") or ()
        ],
        "resourceClaimStatuses": status.get("resourceClaimStatuses"),
        # Last, and only the unmet ones: a truncated summary keeps the container states.
        "conditions": [
            {k: c.get(k) for k in ("type", "status", "reason", "message") if c.get(k)}
            for c in status.get("conditions") or ()
            if c.get("status") != "True"
        ],
    }
