"""Which workloads on the cluster are the driver's, and the accounts they run as (the security
suite). Pure: the objects come from `conformance.kube.access`, read in all namespaces.

A workload (Pod, DaemonSet, Deployment, StatefulSet, ReplicaSet, Job, CronJob) is the driver's
when
- it lives in one of the driver's own namespaces (shared ones such as kube-system excepted);
- it is an object the install names (the readiness DaemonSet, a workload of the manifests);
- Helm made it for one of the driver's releases (the profile's, or the release of any workload
  found above: `meta.helm.sh/release-name` and `-namespace` annotations), in any namespace;
- or its owner (ownerReferences, followed up) is the driver's: a Deployment's ReplicaSets and
  pods, a CronJob's Jobs, a StatefulSet's pods, also those left from an older template.

Templates count as well as pods, so an account is found while its pods restart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.model.privileges import (
    SHARED_NAMESPACES,
    ServiceAccountRef,
    driver_namespaces,
    pod_service_account,
)
from conformance.model.profile import HelmInstall, Profile

WORKLOAD_KINDS = ("Pod", "DaemonSet", "Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob")
HELM_RELEASE = "meta.helm.sh/release-name"
HELM_RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"


@dataclass(frozen=True)
class DriverMarks:
    """What tells the driver's workloads apart from the rest of the cluster."""

    namespaces: frozenset[str] = frozenset()  # every workload there is the driver's
    objects: frozenset[tuple[str, str, str]] = frozenset()  # (kind, namespace, name)
    releases: frozenset[tuple[str, str]] = frozenset()  # Helm (release, namespace)

    @classmethod
    def of(
        cls, profile: Profile, install_objects: Iterable[tuple[str, str, str]] = ()
    ) -> DriverMarks:
        """From the profile and the (kind, namespace, name) of what its install creates
        (a Namespace among them makes that namespace the driver's)."""
        install_objects = list(install_objects)
        namespaces = {*driver_namespaces(profile)}
        namespaces |= {name for kind, _, name in install_objects if kind == "Namespace"}
        objects = {o for o in install_objects if o[0] in WORKLOAD_KINDS}
        readiness = profile.readiness
        if readiness.daemonset_namespace and readiness.daemonset_name:
            objects.add(("DaemonSet", readiness.daemonset_namespace, readiness.daemonset_name))
        releases = set()
        if isinstance(profile.install, HelmInstall):
            releases.add((profile.install.release, profile.install.namespace))
        return cls(
            frozenset(namespaces - SHARED_NAMESPACES), frozenset(objects), frozenset(releases)
        )

    def describe(self) -> str:
        parts = [f"namespaces {sorted(self.namespaces)}"] if self.namespaces else []
        parts += [f"{k} {ns}/{n}" for k, ns, n in sorted(self.objects)]
        parts += [f"Helm release {ns}/{r}" for r, ns in sorted(self.releases)]
        return ", ".join(parts) or "nothing"


@dataclass(frozen=True)
class Workload:
    kind: str
    namespace: str
    name: str
    account: ServiceAccountRef

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name} (as {self.account.name})"


def pod_spec(kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod spec a workload of `kind` runs (a CronJob's through its job template)."""
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return (spec.get("template") or {}).get("spec")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _release(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    annotations = _meta(obj).get("annotations") or {}
    name, namespace = annotations.get(HELM_RELEASE), annotations.get(HELM_RELEASE_NAMESPACE)
    return (name, namespace) if name and namespace else None


def driver_workloads(
    objects: Iterable[tuple[str, Mapping[str, Any]]], marks: DriverMarks
) -> list[Workload]:
    """The driver's workloads among `objects` ((kind, object as the API serves it), all
    namespaces), in a stable order."""
    objects = [(k, o) for k, o in objects if k in WORKLOAD_KINDS]

    def key(kind: str, obj: Mapping[str, Any]) -> tuple[str, str, str]:
        return (kind, str(_meta(obj).get("namespace", "")), str(_meta(obj).get("name", "")))

    direct = {
        key(k, o)
        for k, o in objects
        if key(k, o)[1] in marks.namespaces or key(k, o) in marks.objects
    }
    releases = set(marks.releases) | {
        r for k, o in objects if key(k, o) in direct and (r := _release(o)) is not None
    }
    found = direct | {key(k, o) for k, o in objects if _release(o) in releases}
    found_uids = {_meta(o).get("uid") for k, o in objects if key(k, o) in found}
    # Owners first in no particular order: repeat until no owned object is added.
    while True:
        owned = {
            key(k, o)
            for k, o in objects
            if key(k, o) not in found
            and any(ref.get("uid") in found_uids for ref in _meta(o).get("ownerReferences") or ())
        }
        if not owned:
            break
        found |= owned
        found_uids |= {_meta(o).get("uid") for k, o in objects if key(k, o) in owned}
    return sorted(
        (
            Workload(
                *key(k, o), ServiceAccountRef(key(k, o)[1], pod_service_account(pod_spec(k, o)))
            )
            for k, o in objects
            if key(k, o) in found
        ),
        key=lambda w: (w.namespace, w.kind, w.name),
    )


def accounts_of_workloads(workloads: Iterable[Workload]) -> tuple[ServiceAccountRef, ...]:
    return tuple(sorted({w.account for w in workloads}))
