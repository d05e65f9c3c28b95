"""`profile check` against a live cluster: does the cluster agree with the profile?

What is checked, and how far each check can be trusted:
- the driver's ResourceSlices, by exactly the rules of DRA-CORE-002
  (conformance.model.slice_checks,
  the function the requirement calls): slices on every node the profile selects
  (slicesPerNode), complete pools, unique device names, valid attribute and capacity names;
- the readiness DaemonSet exists and is ready;
- every DeviceClass the profile names exists (and carries the extended resource name);
- every selector compiles: a server-side dry-run create of a ResourceClaim that uses it, so
  the API server's own CEL compiler and cost limits decide;
- every selector matches at least one published device, no device matches two selectors, and
  matchAttributes, the capacity name and a verification attribute exist on published devices:
  conformance.install.profile_selectors, evaluated by the scheduler's own CEL code
  (conformance.cel), the same check `profile check --slices` makes on a dump of the slices.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from conformance.install.profile_selectors import (
    Problem,
    device_problems,
    rejected_selectors,
    selector_expressions,
)
from conformance.model.devices import published_devices
from conformance.model.profile import Profile
from conformance.model.slice_checks import slice_problems_by_check

__all__ = ["Problem", "check_profile_live", "check_profile_slices"]


def _api_message(exc: ApiException) -> str:
    try:
        body = json.loads(exc.body or "{}")
        return body.get("message") or str(exc.reason)
    except (ValueError, TypeError):
        return str(exc.reason)


def _wire(api_client: Any, obj: Any) -> Any:
    return api_client.sanitize_for_serialization(obj)


def check_profile_live(profile: Profile, api_client: Any) -> list[Problem]:
    """Problems found comparing `profile` with the cluster behind `api_client`; empty = fine.
    Errors make the profile unusable on this cluster; notes say what could not be checked."""
    resource = k8s_client.ResourceV1Api(api_client)
    core = k8s_client.CoreV1Api(api_client)
    problems: list[Problem] = []

    try:
        slices = [
            _wire(api_client, s)
            for s in resource.list_resource_slice(
                field_selector=f"spec.driver={profile.driver}"
            ).items
        ]
    except ApiException as exc:
        if exc.status == 404:
            return [
                Problem(
                    "driver",
                    "the cluster does not serve resource.k8s.io/v1 (DRA); "
                    "use Kubernetes >= 1.34 with DynamicResourceAllocation enabled",
                )
            ]
        raise
    devices = published_devices(slices, profile.driver)
    problems += _check_slices(profile, core, slices)
    problems += _check_daemonset(profile, api_client)
    classes, class_problems = _read_classes(profile, resource, api_client)
    problems += class_problems
    compile_problems = _check_selectors_compile(profile, resource)
    problems += compile_problems
    if devices:
        problems += device_problems(profile, devices, classes, rejected_selectors(compile_problems))
    return problems


def check_profile_slices(
    profile: Profile,
    slices: list[Mapping],
    classes: Mapping[str, Mapping],
    rejected: set[str],
) -> list[Problem]:
    """The profile against a dump of the driver's slices, without a cluster. `classes`: the
    DeviceClasses known (the dump's, else the profile's manifests'); a selector whose class
    is unknown is evaluated with its own expression alone, and a note says so. `rejected`:
    selector fields that do not compile (reported already)."""
    devices = published_devices(slices, profile.driver)
    if not devices:
        return [
            Problem(
                "driver",
                f"the slices hold no device of driver {profile.driver} "
                "(check the driver name, or dump the slices again: "
                "kubectl get resourceslices -o yaml)",
            )
        ]
    problems: list[Problem] = []
    known = dict(classes)
    for field, class_name, _ in selector_expressions(profile):
        if class_name not in known:
            known[class_name] = {}
            problems.append(
                Problem(
                    f"{field}.class",
                    f"DeviceClass {class_name} is neither in the slices file nor in the "
                    "profile's manifests: only the selector's own expression was evaluated",
                    "note",
                )
            )
    return problems + device_problems(profile, devices, known, rejected)


# Which profile field a DRA-CORE-002 check's problems point at.
_SLICE_CHECK_FIELDS = {"nodes": "readiness.slicesPerNode"}


def _check_slices(profile: Profile, core: Any, slices: list[Mapping]) -> list[Problem]:
    nodes = [n.metadata.name for n in core.list_node(label_selector=profile.node_selector).items]
    problems = []
    if not nodes:
        problems.append(
            Problem(
                "nodes.selector", f"no node matches the label selector {profile.node_selector!r}"
            )
        )
    if not slices:
        return [
            *problems,
            Problem(
                "driver",
                f"no ResourceSlice has spec.driver={profile.driver}: is the driver installed "
                "and running? (kubectl get resourceslices; check the driver name)",
            ),
        ]
    found = slice_problems_by_check(
        slices, profile.driver, nodes, profile.readiness.slices_per_node
    )
    for check, messages in found.items():
        problems += [
            Problem(_SLICE_CHECK_FIELDS.get(check, "driver"), f"{m} (DRA-CORE-002 fails on this)")
            for m in messages
        ]
    return problems


def _check_daemonset(profile: Profile, api_client: Any) -> list[Problem]:
    name, namespace = profile.readiness.daemonset_name, profile.readiness.daemonset_namespace
    if not name or not namespace:
        return []
    try:
        ds = k8s_client.AppsV1Api(api_client).read_namespaced_daemon_set(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return [Problem("readiness.daemonSet", f"DaemonSet {namespace}/{name} not found")]
        raise
    status = ds.status
    desired, ready = status.desired_number_scheduled or 0, status.number_ready or 0
    if desired == 0 or ready < desired:
        return [
            Problem(
                "readiness.daemonSet",
                f"DaemonSet {namespace}/{name} has {ready} of {desired} pods ready",
                "warning",
            )
        ]
    return []


def _read_classes(
    profile: Profile, resource: Any, api_client: Any
) -> tuple[dict[str, Mapping], list[Problem]]:
    fields: dict[str, str] = {f"deviceClasses.{k}": v for k, v in profile.device_classes.items()}
    fields.update({f"selectors.{n}.class": s.device_class for n, s in profile.selectors.items()})
    if profile.extended_resource:
        fields["extendedResource.class"] = profile.extended_resource.device_class
    block = profile.partitionable
    if block is not None:
        fields["partitionableDevices.whole.class"] = block.whole.device_class
        fields["partitionableDevices.partition.class"] = block.partition.device_class
    classes: dict[str, Mapping] = {}
    problems: list[Problem] = []
    seen: set[str] = set()
    for field_path, name in fields.items():
        if name in seen:
            continue  # one problem per class, at the first field naming it
        seen.add(name)
        try:
            classes[name] = _wire(api_client, resource.read_device_class(name))
        except ApiException as exc:
            if exc.status != 404:
                raise
            problems.append(
                Problem(
                    field_path, f"DeviceClass {name} does not exist (kubectl get deviceclasses)"
                )
            )
    ext = profile.extended_resource
    if ext and ext.device_class in classes:
        actual = (classes[ext.device_class].get("spec") or {}).get("extendedResourceName")
        if actual != ext.name:
            problems.append(
                Problem(
                    "extendedResource.name",
                    f"DeviceClass {ext.device_class} has spec.extendedResourceName={actual!r}, "
                    f"not {ext.name!r}",
                )
            )
    return classes, problems


def _check_selectors_compile(profile: Profile, resource: Any) -> list[Problem]:
    problems = []
    for field_path, device_class, expression in selector_expressions(profile):
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"generateName": "dra-conformance-profile-check-"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "probe",
                            "exactly": {
                                "deviceClassName": device_class,
                                "selectors": [{"cel": {"expression": expression}}],
                            },
                        }
                    ]
                }
            },
        }
        try:
            resource.create_namespaced_resource_claim("default", body, dry_run="All")
        except ApiException as exc:
            if exc.status in (400, 422):
                problems.append(
                    Problem(
                        f"{field_path}.expression",
                        f"the API server rejects it: {_api_message(exc)}",
                    )
                )
            else:
                raise
    return problems


def check_profile_offline(
    profile: Profile, evaluator: Any, slices_file: str | None = None
) -> list[Problem]:
    """Without a cluster: every selector (the profile's, and the DeviceClasses its manifests
    ship) compiled as the API server compiles it; with `slices_file` (conformance.install.
    slices_file) also matched against those devices."""
    from conformance.install.profile_selectors import compile_problems, shipped_classes
    from conformance.install.slices_file import read_slices_file

    slices, dumped_classes = read_slices_file(slices_file) if slices_file else ([], {})
    classes = {**shipped_classes(profile), **dumped_classes}
    problems = compile_problems(profile, evaluator, classes)
    if slices_file:
        problems += check_profile_slices(profile, slices, classes, rejected_selectors(problems))
    return problems
