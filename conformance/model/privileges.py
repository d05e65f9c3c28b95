"""What a DRA driver's service accounts must not be allowed to do (the security suite), and the
few rights a declared feature needs (its claim status writes), as SubjectAccessReview
attributes. Pure: which accounts and which checks; asking the API server
is `conformance.kube.access`.

Every check is a *forbidden* access: a driver passes when the authorizer denies all of them.
The lists are chosen so that a correct node-local driver passes (the dra-example-driver chart
and the NVIDIA GPU driver's chart hold none of them), following what v1.37.2 authorizes:

- ResourceClaim status is split by `DRAResourceClaimGranularStatusAuthorization` (beta, on by
  default since 1.36; pkg/registry/resource/utils.go): `status.allocation` and
  `status.reservedFor` need update/patch on the synthetic `resourceclaims/binding` (the
  scheduler's), `status.devices` needs `associated-node:<verb>` (or `arbitrary-node:<verb>`)
  on `resourceclaims/driver` with the driver's name as resource name.
- ResourceSlice writes are not checked: RBAC cannot scope them to a driver or a node (the
  NodeRestriction admission plugin only limits node identities), and a node-local driver
  needs create/update/delete on them cluster-wide.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.model.profile import HelmInstall, Profile

ALL_NAMESPACES = ""
# Namespaces holding more than the driver: only the driver's own pods are looked at there,
# and the driver's account is not excused for them.
SHARED_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", "default"})
# A namespace whose Secrets and pods are the control plane's: checked besides all namespaces
# (a RoleBinding there is invisible to an all-namespaces review).
CONTROL_PLANE_NAMESPACE = "kube-system"
# A driver name no driver has: a rule scoped to `resourceNames: [<driver>]` does not grant it.
OTHER_DRIVER = "other-driver.dra-conformance.invalid"

WORKLOAD_RESOURCES = (
    ("", "pods"),
    ("", "replicationcontrollers"),
    ("apps", "deployments"),
    ("apps", "daemonsets"),
    ("apps", "statefulsets"),
    ("apps", "replicasets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
)


@dataclass(frozen=True, order=True)
class ServiceAccountRef:
    namespace: str
    name: str

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"

    @property
    def groups(self) -> tuple[str, ...]:
        """The groups the v1.37.2 authenticator gives every token of this account."""
        return (
            "system:serviceaccounts",
            f"system:serviceaccounts:{self.namespace}",
            "system:authenticated",
        )

    def __str__(self) -> str:
        return f"ServiceAccount {self.namespace}/{self.name}"


@dataclass(frozen=True)
class AccessCheck:
    """One SubjectAccessReview's resourceAttributes; `namespace` "" means all namespaces (and
    cluster-scoped resources)."""

    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ALL_NAMESPACES

    def resource_attributes(self) -> dict[str, str]:
        attributes = {"verb": self.verb, "group": self.group, "resource": self.resource}
        for key in ("subresource", "name", "namespace"):
            if getattr(self, key):
                attributes[key] = getattr(self, key)
        return attributes

    def __str__(self) -> str:
        resource = self.resource + (f"/{self.subresource}" if self.subresource else "")
        if self.group:
            resource += f".{self.group}"
        text = f"{self.verb} {resource}"
        if self.name:
            text += f" named {self.name!r}"
        return text + (f" in namespace {self.namespace}" if self.namespace else " cluster-wide")


@dataclass(frozen=True)
class Violation:
    """An access the authorizer granted to a driver account although it is forbidden."""

    account: ServiceAccountRef
    check: AccessCheck
    reason: str  # the authorizer's, e.g. 'RBAC: allowed by ClusterRoleBinding "x" of ...'

    def __str__(self) -> str:
        return f"{self.account} may {self.check}" + (f" ({self.reason})" if self.reason else "")


def driver_namespaces(profile: Profile) -> tuple[str, ...]:
    """The namespaces the profile puts the driver in: its readiness DaemonSet's and, for Helm,
    the release's."""
    found = [profile.readiness.daemonset_namespace]
    if isinstance(profile.install, HelmInstall):
        found.append(profile.install.namespace)
    return tuple(dict.fromkeys(n for n in found if n))


def other_namespaces(own: Iterable[str]) -> tuple[str, ...]:
    """Where a namespaced access is forbidden: all namespaces, and the control plane's unless
    the driver lives there (a driver may read and run things in its own namespace)."""
    own = set(own)
    return (ALL_NAMESPACES,) + (
        () if CONTROL_PLANE_NAMESPACE in own else (CONTROL_PLANE_NAMESPACE,)
    )


def pod_service_account(pod_spec: Mapping[str, Any] | None) -> str:
    """The account a pod runs as (the API server defaults an empty name to `default`)."""
    return str((pod_spec or {}).get("serviceAccountName") or "default")


def accounts_of(
    namespace: str, pod_specs: Iterable[Mapping[str, Any] | None]
) -> set[ServiceAccountRef]:
    return {ServiceAccountRef(namespace, pod_service_account(spec)) for spec in pod_specs}


# --- the checks, one list per requirement --------------------------------------------------


def secret_reads(own_namespaces: Iterable[str]) -> tuple[AccessCheck, ...]:
    """DRA-SEC-001: no get/list/watch of Secrets outside the driver's own namespaces."""
    return tuple(
        AccessCheck(verb, "secrets", namespace=namespace)
        for namespace in other_namespaces(own_namespaces)
        for verb in ("get", "list", "watch")
    )


def escalations(own_namespaces: Iterable[str]) -> tuple[AccessCheck, ...]:
    """DRA-SEC-002: nothing that turns the driver's token into more rights than it holds."""
    rbac = "rbac.authorization.k8s.io"
    checks = [AccessCheck("*", "*", group="*")]  # cluster-admin
    checks += [
        AccessCheck(verb, resource, group=rbac)
        for resource in ("clusterroles", "roles")
        for verb in ("bind", "escalate")
    ]
    checks += [AccessCheck("impersonate", r) for r in ("users", "groups", "serviceaccounts")]
    checks += [
        AccessCheck("impersonate", r, group="authentication.k8s.io") for r in ("uids", "userextras")
    ]
    checks += [AccessCheck("create", "nodes", subresource="proxy")]
    checks += [AccessCheck("get", "nodes", subresource="proxy")]
    for namespace in other_namespaces(own_namespaces):
        checks.append(
            AccessCheck("create", "serviceaccounts", subresource="token", namespace=namespace)
        )
        checks += [
            AccessCheck("create", "pods", subresource=sub, namespace=namespace)
            for sub in ("exec", "attach")
        ]
        checks += [
            AccessCheck("create", resource, group=group, namespace=namespace)
            for group, resource in WORKLOAD_RESOURCES
        ]
    return tuple(checks)


def claim_status_writes(driver: str) -> tuple[AccessCheck, ...]:
    """DRA-SEC-003: no write of a claim's allocation (the scheduler's) and no write of another
    driver's `status.devices`."""
    group = "resource.k8s.io"
    checks = [
        AccessCheck(verb, "resourceclaims", group=group, subresource="binding")
        for verb in ("update", "patch")
    ]
    other = OTHER_DRIVER if driver != OTHER_DRIVER else "other-" + driver
    checks += [
        AccessCheck(prefix + verb, "resourceclaims", group=group, subresource="driver", name=other)
        for prefix in ("associated-node:", "arbitrary-node:")
        for verb in ("update", "patch")
    ]
    return tuple(checks)


def dra_admin_writes() -> tuple[AccessCheck, ...]:
    """DRA-SEC-004: no write of DeviceClasses, DeviceTaintRules or ResourceClaims (their spec
    is immutable; their finalizers are the resource claim controller's)."""
    group = "resource.k8s.io"
    checks = [
        AccessCheck(verb, resource, group=group)
        for resource in ("deviceclasses", "devicetaintrules")
        for verb in ("create", "update", "patch", "delete")
    ]
    checks += [
        AccessCheck(verb, "resourceclaims", group=group) for verb in ("update", "patch", "delete")
    ]
    return tuple(checks)


# --- what a driver with the device-status capability needs (DRA-CORE-009) ------------------


def status_subresource_writes(namespace: str) -> tuple[AccessCheck, ...]:
    """Any one of these lets an account send a write to a claim's status subresource."""
    return tuple(
        AccessCheck(
            verb,
            "resourceclaims",
            group="resource.k8s.io",
            subresource="status",
            namespace=namespace,
        )
        for verb in ("patch", "update")
    )


def own_device_status_writes(driver: str, namespace: str) -> tuple[AccessCheck, ...]:
    """Any one of these lets v1.37.2 accept that write's change of `driver`'s entries in
    status.devices (associated-node: from the claim's node only)."""
    return tuple(
        AccessCheck(
            prefix + verb,
            "resourceclaims",
            group="resource.k8s.io",
            subresource="driver",
            name=driver,
            namespace=namespace,
        )
        for prefix in ("associated-node:", "arbitrary-node:")
        for verb in ("patch", "update")
    )
