"""The scheduler's verdict of each selector on each node, from real allocations.

For every group of slices (one real node's, or captured ones) a Node object with no kubelet
is created, holding copies of those slices: the scheduler allocates on it as on any node, and
nothing is ever prepared or run. Per selector and node, one ResourceClaim asks for all the
devices the selector matches (allocationMode All, adminAccess, so claims never compete for a
device) and one pod pinned to the node uses it. The scheduler then either allocates the claim
(the devices it matched), finds the pod unschedulable (it matches none), or fails with a CEL
runtime error (evaluating it erred on a device: the allocator stops there).

The copies keep what CEL sees (driver, attributes, capacity, allowMultipleAllocations) and
drop what would change the allocation but not the match: counter consumption (an all-devices
claim over a partitionable device's whole and its partitions exceeds the counters), taints, and
binding conditions (the scheduler would hold the pod in PreBind for conditions no driver ever
reports for these copies). Their pools are renamed `<node>/<pool>`, so no claim here ever names
a real device, and they are deleted before the function returns: a driver's pool is never seen
twice.
"""

from __future__ import annotations

import copy
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from cel_differential.compare import NodeVerdict

ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
ROLE_LABEL = "node-role.kubernetes.io/control-plane"  # keeps DaemonSets of workers off it


@dataclass(frozen=True)
class NodeGroup:
    """Slices to copy onto one node of their own (`name`: the Node object's)."""

    name: str
    slices: tuple[Mapping, ...]


def device_ids(slices: Iterable[Mapping]) -> dict[str, tuple[str, Mapping]]:
    """`<pool>/<device>` -> (driver, device) of the slices' devices."""
    out = {}
    for s in slices:
        spec = s["spec"]
        for device in spec.get("devices") or ():
            out[f"{spec['pool']['name']}/{device['name']}"] = (spec["driver"], device)
    return out


def _copy_slices(group: NodeGroup, node_uid: str) -> list[dict]:
    with_devices = [s for s in group.slices if s["spec"].get("devices")]
    out = []
    for s in with_devices:
        spec = copy.deepcopy(dict(s["spec"]))
        for device in spec["devices"]:
            device.pop("consumesCounters", None)
            for key in ("taints", "bindingConditions", "bindingFailureConditions", "bindsToNode"):
                device.pop(key, None)
        spec["pool"] = {
            "name": f"{group.name}/{spec['pool']['name']}",
            "generation": 1,
            "resourceSliceCount": len(with_devices),
        }
        spec["nodeName"] = group.name
        for key in ("nodeSelector", "allNodes", "perDeviceNodeSelection", "sharedCounters"):
            spec.pop(key, None)
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {
                    "generateName": f"{group.name}-",
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Node", "name": group.name, "uid": node_uid}
                    ],
                },
                "spec": spec,
            }
        )
    return out


def _node(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, ROLE_LABEL: ""}},
    }


def _node_status() -> dict:
    resources = {"cpu": "64", "memory": "256Gi", "pods": "2000"}
    return {"status": {"capacity": resources, "allocatable": resources}}


def _claim(name: str, device_class: str, expression: str) -> dict:
    request = {
        "deviceClassName": device_class,
        "allocationMode": "All",
        "adminAccess": True,
        "selectors": [{"cel": {"expression": expression}}],
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "all", "exactly": request}]}},
    }


def _pod(name: str, claim: str, node: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [{"operator": "Exists"}],
            "resourceClaims": [{"name": "c", "resourceClaimName": claim}],
            "containers": [
                {
                    "name": "c",
                    "image": "never-pulled.invalid/none",
                    "resources": {"claims": [{"name": "c"}]},
                }
            ],
            "terminationGracePeriodSeconds": 0,
        },
    }


@dataclass
class SchedulerRun:
    verdicts: dict[tuple[str, str], NodeVerdict]  # (expression, node) -> verdict
    seconds: float  # from the first object created to the last verdict
    pods: int
    cleanup_seconds: float = 0.0


def _pod_verdict(pod: Any, claims: Mapping[str, Any], claim_name: str) -> NodeVerdict | None:
    if pod.spec.node_name:
        claim = claims.get(claim_name)
        allocation = claim.status.allocation if claim and claim.status else None
        if allocation is None:
            return None  # bound, the claim's allocation not yet listed
        prefix = f"{pod.spec.node_name}/"  # the copies' pools: back to the originals' ids
        return NodeVerdict(
            "allocated",
            frozenset(
                f"{r.pool.removeprefix(prefix)}/{r.device}"
                for r in allocation.devices.results or ()
            ),
        )
    for condition in pod.status.conditions or ():
        if condition.type != "PodScheduled" or condition.status != "False":
            continue
        message = condition.message or ""
        if "CEL runtime error" in message:
            return NodeVerdict("error")
        if condition.reason == "Unschedulable":
            return NodeVerdict("unschedulable")
    return None


def scheduler_verdicts(
    api_client: Any,
    groups: Sequence[NodeGroup],
    expressions: Sequence[str],
    timeout: float = 240.0,
    workers: int = 6,
) -> SchedulerRun:
    """Every expression (each must compile) on every group's node, judged by the cluster's
    scheduler. Creates the nodes, slices, a DeviceClass and a namespace, and removes them."""
    core = k8s_client.CoreV1Api(api_client)
    resource = k8s_client.ResourceV1Api(api_client)
    token = secrets.token_hex(3)
    namespace = f"cel-differential-{token}"
    device_class = f"cel-differential-{token}"
    node_uids: dict[str, str] = {}
    begin = time.monotonic()
    try:
        for group in groups:
            node = core.create_node(_node(group.name))
            node_uids[group.name] = node.metadata.uid
            core.patch_node_status(group.name, _node_status())
            for body in _copy_slices(group, node.metadata.uid):
                resource.create_resource_slice(body)
        # No selectors: the claims' own selector alone decides, on every driver's devices.
        resource.create_device_class(
            {"metadata": {"name": device_class}, "spec": {"selectors": []}}
        )
        core.create_namespace(
            {"metadata": {"name": namespace, "labels": {ADMIN_ACCESS_LABEL: "true"}}}
        )
        plan = {
            f"e{i}-n{j}": (expression, group.name)
            for i, expression in enumerate(expressions)
            for j, group in enumerate(groups)
        }

        def create(name: str) -> None:
            expression, node = plan[name]
            resource.create_namespaced_resource_claim(
                namespace, _claim(name, device_class, expression)
            )
            core.create_namespaced_pod(namespace, _pod(name, name, node))

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(create, plan))
        verdicts: dict[tuple[str, str], NodeVerdict] = {}
        deadline = time.monotonic() + timeout
        while len(verdicts) < len(plan) and time.monotonic() < deadline:
            time.sleep(1)
            claims = {
                c.metadata.name: c for c in resource.list_namespaced_resource_claim(namespace).items
            }
            for pod in core.list_namespaced_pod(namespace).items:
                name = pod.metadata.name
                if plan[name] in verdicts:
                    continue
                verdict = _pod_verdict(pod, claims, name)
                if verdict is not None:
                    verdicts[plan[name]] = verdict
        run = SchedulerRun(verdicts, time.monotonic() - begin, len(plan))
    finally:
        cleaning = time.monotonic()
        _clean(core, resource, namespace, device_class, node_uids)
    run.cleanup_seconds = time.monotonic() - cleaning
    return run


def _clean(
    core: Any, resource: Any, namespace: str, device_class: str, nodes: Mapping[str, str]
) -> None:
    def gone(call: Any, *args: Any, **kwargs: Any) -> None:
        try:
            call(*args, **kwargs)
        except ApiException as exc:
            if exc.status != 404:
                raise

    # The slices and nodes go first, then the namespace: with no kubelet to
    # confirm a pod's end, the pod garbage collector deletes the pods of the deleted nodes
    # and the namespace controller the rest, in the background (deleting 780 pods here one
    # by one took 47 s on a loaded CI machine).
    gone(resource.delete_device_class, device_class)
    for node in nodes:
        for item in resource.list_resource_slice(field_selector=f"spec.nodeName={node}").items:
            gone(resource.delete_resource_slice, item.metadata.name)
        gone(core.delete_node, node)
    gone(core.delete_namespace, namespace)
