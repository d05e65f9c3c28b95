"""Deployments whose pods each get a claim from a ResourceClaimTemplate: the shape of a real DRA
workload, and what gives "a replacement pod from its controller" after an eviction."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from conformance.kube import objects, state
from conformance.kube.builders import PodClaim
from conformance.kube.harness_causes import raise_if_pull_failure
from conformance.kube.waits import wait_until
from conformance.observe.steps import attach_yaml, step
from conformance.scenario_api.workloads import HOSTNAME_LABEL, Workloads

APP_LABEL = "app.kubernetes.io/name"  # what Builders.deployment selects on
POD_CLAIM = "dev"


def prefer_node(hostname: str, weight: int = 100) -> dict[str, Any]:
    """Preferred (not required) node affinity: the pod lands there when it can, and its
    replacement may go elsewhere once the node is cordoned or its devices are tainted."""
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": weight,
                    "preference": {
                        "matchExpressions": [
                            {"key": HOSTNAME_LABEL, "operator": "In", "values": [hostname]}
                        ]
                    },
                }
            ]
        }
    }


def create_claim_deployment(
    workload: Workloads,
    name: str,
    *,
    template: str,
    replicas: int = 1,
    prefer: str | None = None,
    pre_stop_seconds: int = 0,
) -> dict[str, Any]:
    """A Deployment of workload pods, each with pod claim `dev` from `template`.

    `prefer`: a node name to prefer. `pre_stop_seconds`: keep a deleted pod's object around
    that long (a preStop sleep), so conditions set just before deletion can be read."""
    pod = workload.build.pod(
        name,
        workload.namespace,
        image=workload.context.workload_image,
        claims=[PodClaim(POD_CLAIM, template=template)],
        termination_grace_period_seconds=max(5, pre_stop_seconds + 5),
    )
    if prefer is not None:
        hostname = workload.node_selector(prefer)[HOSTNAME_LABEL]
        pod["spec"]["affinity"] = prefer_node(hostname)
    if pre_stop_seconds:
        pod["spec"]["containers"][0]["lifecycle"] = {
            "preStop": {"exec": {"command": ["/bin/sh", "-c", f"sleep {pre_stop_seconds}"]}}
        }
    body = workload.build.deployment(name, workload.namespace, replicas=replicas, pod=pod)
    where = f", preferring node {prefer}" if prefer else ""
    with step(
        f"create Deployment {workload.ref(name)} ({replicas} replica(s), each with a claim from "
        f"template {template}{where})"
    ):
        return objects.create(workload.k8s, body)


def deployment_pods(workload: Workloads, name: str) -> list[dict[str, Any]]:
    listing = workload.k8s.core.list_namespaced_pod(
        workload.namespace, label_selector=f"{APP_LABEL}={name}"
    )
    pods = [workload.k8s.to_dict(p) for p in listing.items]
    return sorted(pods, key=lambda p: p["metadata"]["name"])


def is_healthy(pod: Mapping[str, Any]) -> bool:
    """Running, every container ready, not being deleted (what a budget counts)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return (
        not pod["metadata"].get("deletionTimestamp")
        and state.pod_phase(pod) == "Running"
        and bool(statuses)
        and all(s.get("ready") for s in statuses)
    )


def wait_ready_pods(
    workload: Workloads,
    name: str,
    count: int,
    *,
    exclude_uids: Collection[str] = (),
    timeout: float | None = None,
) -> list[dict[str, Any]]:
    """Wait for `count` Running, ready, not-terminating pods of the Deployment whose UIDs are
    not in `exclude_uids` (the replacements of evicted pods)."""

    def fresh(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [p for p in pods if is_healthy(p) and p["metadata"]["uid"] not in exclude_uids]

    def pull_failures(pods: list[dict[str, Any]]) -> None:
        for pod in pods:  # a pod that cannot get its image: the harness's error, at once
            if pod["metadata"]["uid"] not in exclude_uids:
                raise_if_pull_failure(pod)

    pods = wait_until(
        lambda: deployment_pods(workload, name),
        lambda ps: len(fresh(ps)) >= count,
        describe=f"{count} ready pod(s) of Deployment {workload.namespace}/{name}"
        + (f" other than {sorted(exclude_uids)}" if exclude_uids else ""),
        timeout=timeout or workload.timeout("podRunning"),
        show=lambda ps: [
            {"name": p["metadata"]["name"], "uid": p["metadata"]["uid"], **state.pod_summary(p)}
            for p in ps
        ],
        abort=pull_failures,
    )
    ready = fresh(pods)[:count]
    for pod in ready:
        attach_yaml(f"Pod {pod['metadata']['name']} (running)", pod)
    return ready


def claim_of(workload: Workloads, pod: Mapping[str, Any]) -> str:
    """The ResourceClaim generated for the pod's claim `dev`."""
    names = workload.pod_claim_names(pod)
    assert POD_CLAIM in names, (
        f"pod {pod['metadata']['name']} has no generated claim for pod claim {POD_CLAIM!r} in "
        f"status.resourceClaimStatuses: {(pod.get('status') or {}).get('resourceClaimStatuses')}"
    )
    return names[POD_CLAIM]
