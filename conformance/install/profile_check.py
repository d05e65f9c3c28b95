"""`profile check` against a live cluster: does the cluster agree with the profile?

What is checked, and how far each check can be trusted:
- the driver's ResourceSlices, by exactly the rules of DRA-CORE-002
  (conformance.scenario_api.slice_checks,
  the function the requirement calls): slices on every node the profile selects
  (slicesPerNode), complete pools, unique device names, valid attribute and capacity names;
- the readiness DaemonSet exists and is ready;
- every DeviceClass the profile names exists (and carries the extended resource name);
- every selector compiles: a server-side dry-run create of a ResourceClaim that uses it, so
  the API server's own CEL compiler and cost limits decide;
- every selector matches at least one published device, and no device matches two selectors.
  This part is evaluated locally and ONLY for expressions (the selector's and its class's)
  that are conjunctions of `==` comparisons (conformance.model.cel). Other expressions are reported
  as "not checked" notes, never as passing: real matching happens in the scheduler, and a
  throwaway claim+pod would cost a scheduling cycle per selector and still not prove
  disjointness;
- matchAttributes, the capacity name and a verification attribute exist on published devices.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal

from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from conformance.model.devices import (
    PublishedDevice,
    class_expressions,
    matching_devices,
    published_devices,
)
from conformance.model.profile import Profile
from conformance.scenario_api.slice_checks import slice_problems_by_check

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True)
class Problem:
    field: str  # the profile field concerned, e.g. "selectors.large.expression"
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.severity}: {self.field}: {self.message}"


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
        rejected = {
            p.field.split(".")[1] for p in compile_problems if p.field.startswith("selectors.")
        }
        problems += _check_selector_matches(profile, devices, classes, rejected)
        problems += _check_attributes(profile, devices)
    return problems


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
    fields.update({f"{path}.class": c for path, c, _ in _partitionable_choices(profile)})
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


def _partitionable_choices(profile: Profile) -> list[tuple[str, str, str | None]]:
    """(field, class, expression) of the profile's partitionableDevices sides."""
    block = profile.partitionable
    if block is None:
        return []
    return [
        (f"partitionableDevices.{side}", choice.device_class, choice.expression)
        for side, choice in (("whole", block.whole), ("partition", block.partition))
    ]


def _check_selectors_compile(profile: Profile, resource: Any) -> list[Problem]:
    problems = []
    expressions = [
        (f"selectors.{n}", s.device_class, s.expression) for n, s in profile.selectors.items()
    ]
    expressions += [c for c in _partitionable_choices(profile) if c[2]]
    for field_path, device_class, expression in expressions:
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


def _check_selector_matches(
    profile: Profile,
    devices: tuple[PublishedDevice, ...],
    classes: Mapping[str, Mapping],
    rejected: Collection[str] = (),
) -> list[Problem]:
    """`rejected`: selectors the API server refused to compile (already reported)."""
    problems: list[Problem] = []
    matched: dict[str, frozenset[str]] = {}
    for name, sel in profile.selectors.items():
        cls = classes.get(sel.device_class)
        if cls is None or name in rejected:
            continue  # reported as a missing class or a rejected expression
        ids = matching_devices(class_expressions(cls) + [sel.expression], devices, profile.driver)
        if ids is None:
            problems.append(
                Problem(
                    f"selectors.{name}",
                    "not checked which devices it matches: only conjunctions of == comparisons "
                    "are evaluated locally (the API server accepted the expression)",
                    "note",
                )
            )
        elif not ids:
            problems.append(
                Problem(
                    f"selectors.{name}",
                    f"matches none of the {len(devices)} published devices "
                    f"(with the selectors of DeviceClass {sel.device_class})",
                )
            )
        else:
            matched[name] = ids
    for a, b in combinations(sorted(matched), 2):
        both = sorted(matched[a] & matched[b])
        if both:
            problems.append(
                Problem(
                    f"selectors.{b}",
                    f"selectors {a} and {b} both match {', '.join(both[:3])}"
                    f"{' ...' if len(both) > 3 else ''}; "
                    "selectors must pick disjoint kinds of device",
                )
            )
    return problems


def _check_attributes(profile: Profile, devices: tuple[PublishedDevice, ...]) -> list[Problem]:
    problems = []
    for i, attribute in enumerate(profile.match_attributes):
        if not any(attribute in d.attributes for d in devices):
            problems.append(
                Problem(f"matchAttributes[{i}]", f"no published device has attribute {attribute}")
            )
    if profile.capacity and not any(profile.capacity in d.capacity for d in devices):
        problems.append(Problem("capacity", f"no published device has capacity {profile.capacity}"))
    attribute = profile.verification.attribute
    if attribute:
        missing = [d.id for d in devices if attribute not in d.attributes]
        if missing:
            problems.append(
                Problem(
                    "verification.value",
                    f"{len(missing)} published device(s) lack attribute {attribute} "
                    f"(e.g. {missing[0]}), so the container cannot be checked for them",
                )
            )
    return problems
