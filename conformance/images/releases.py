"""What each supported Kubernetes release pins and needs, read from that release's sources.

Facts per minor were checked in the pinned patch release (`kubernetes`): the `go`
directive of go.mod and `.go-version`; kubeadm's `DefaultEtcdVersion` and `PauseVersion`
(cmd/kubeadm/app/constants/constants.go); gate specs in pkg/features/kube_features.go;
default-served versions in pkg/controlplane/instance.go (every release serves only
resource.k8s.io/v1 by default, beta and alpha versions are off) and, for DeviceTaintRule,
pkg/registry/resource/rest/storage_resource.go. Everything else here is derived from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.model import kube_version

GROUP = "resource.k8s.io"

# Stage of a gate at a release, as its versioned spec has it there.
ALPHA = "alpha"  # default off
BETA_OFF = "beta-off"
BETA_ON = "beta-on"
GA = "ga"  # default on, may still be set (a deprecation warning)
GA_LOCKED = "ga-locked"  # LockToDefault: setting it is pointless, setting it off is fatal

# The DRA gates behind behaviours the suite tests. A gate absent from a release's table does
# not exist there: kubelet and kube-apiserver refuse unknown gates, so it is never passed.
TESTED_GATES = (
    "DRAAdminAccess",
    "DRAConsumableCapacity",
    "DRADeviceBindingConditions",
    "DRADeviceTaintRules",
    "DRADeviceTaints",
    "DRAExtendedResource",
    "DRAPartitionableDevices",
    "DRAPrioritizedList",
    "DRAResourceClaimDeviceStatus",
    "ResourceHealthStatus",
)


@dataclass(frozen=True)
class Release:
    kubernetes: str  # the patch release these facts were read from
    go_directive: str  # go.mod `go`: the oldest Go that builds it (GOTOOLCHAIN=local)
    go_upstream: str  # .go-version: the Go upstream releases it with
    etcd_kubeadm: str  # the etcd image tag kubeadm asks for
    etcd_build: str  # the etcd we build and tag with that name
    pause: str  # kubeadm's PauseVersion
    gates: dict[str, str]  # TESTED_GATES present in this release -> stage
    device_taint_rule_versions: tuple[str, ...]  # resource.k8s.io versions with the kind
    default_versions: tuple[str, ...] = ("v1",)  # resource.k8s.io versions served by default
    # Modules of its go.mod the Go module proxy here refuses; see cluster/substitutes.py.
    substitutes: tuple[str, ...] = ()

    @property
    def minor(self) -> str:
        return ".".join(self.kubernetes.removeprefix("v").split(".")[:2])

    def feature_gates(self) -> tuple[str, ...]:
        """Gates to switch on: every tested gate that exists and is not GA yet (beta ones
        explicitly too, so a cluster never depends on a default)."""
        return tuple(g for g, s in self.gates.items() if s in (ALPHA, BETA_OFF, BETA_ON))

    def device_taint_rule_version(self) -> str:
        """The newest version with DeviceTaintRule: served by default, or switched on."""
        order = ("v1", "v1beta2", "v1beta1", "v1alpha3")
        return next(v for v in order if v in self.device_taint_rule_versions)

    def runtime_config(self) -> dict[str, str]:
        """API versions to switch on so DeviceTaintRule is served."""
        version = self.device_taint_rule_version()
        return {} if version in self.default_versions else {f"{GROUP}/{version}": "true"}

    def served_versions(self) -> tuple[str, ...]:
        """resource.k8s.io versions our kind cluster serves (default + runtime config)."""
        return self.default_versions + tuple(
            k.removeprefix(f"{GROUP}/") for k in self.runtime_config()
        )


RELEASES: dict[str, Release] = {
    r.minor: r
    for r in (
        Release(
            kubernetes="v1.35.4",
            go_directive="1.25.0",
            go_upstream="1.25.9",
            etcd_kubeadm="3.6.6-0",
            etcd_build="v3.6.6",
            pause="3.10.1",
            gates={
                "DRAAdminAccess": BETA_ON,
                "DRAConsumableCapacity": ALPHA,
                "DRADeviceBindingConditions": ALPHA,
                "DRADeviceTaintRules": ALPHA,
                "DRADeviceTaints": ALPHA,
                "DRAExtendedResource": ALPHA,
                "DRAPartitionableDevices": ALPHA,
                "DRAPrioritizedList": BETA_ON,
                "DRAResourceClaimDeviceStatus": BETA_ON,
                "ResourceHealthStatus": ALPHA,
            },
            device_taint_rule_versions=("v1alpha3",),
        ),
        Release(
            kubernetes="v1.36.3",
            go_directive="1.26.0",
            go_upstream="1.26.5",
            etcd_kubeadm="3.6.8-0",
            etcd_build="v3.6.8",
            pause="3.10.2",
            gates={
                "DRAAdminAccess": GA_LOCKED,
                "DRAConsumableCapacity": BETA_ON,
                "DRADeviceBindingConditions": BETA_ON,
                "DRADeviceTaintRules": BETA_OFF,  # its API (v1beta2) is off by default
                "DRADeviceTaints": BETA_ON,
                "DRAExtendedResource": BETA_ON,
                "DRAPartitionableDevices": BETA_ON,
                "DRAPrioritizedList": GA,
                "DRAResourceClaimDeviceStatus": BETA_ON,
                "ResourceHealthStatus": BETA_ON,
            },
            device_taint_rule_versions=("v1beta2", "v1alpha3"),
        ),
        Release(
            kubernetes="v1.37.2",
            go_directive="1.26.0",
            go_upstream="1.26.10",
            etcd_kubeadm="3.7.0-0",
            etcd_build="v3.7.3",  # a newer patch than kubeadm's; the cached image has it
            pause="3.10.2",
            gates={
                "DRAAdminAccess": GA_LOCKED,
                "DRAConsumableCapacity": BETA_ON,
                "DRADeviceBindingConditions": BETA_ON,
                "DRADeviceTaintRules": GA,
                "DRADeviceTaints": GA,
                "DRAExtendedResource": GA_LOCKED,
                "DRAPartitionableDevices": BETA_ON,
                "DRAPrioritizedList": GA_LOCKED,
                "DRAResourceClaimDeviceStatus": GA_LOCKED,
                "ResourceHealthStatus": BETA_ON,
            },
            device_taint_rule_versions=("v1", "v1beta2", "v1alpha3"),
        ),
        Release(
            kubernetes="v1.38.0-beta.0",
            go_directive="1.27.0",
            go_upstream="1.27.3",
            etcd_kubeadm="3.7.1-0",
            etcd_build="v3.7.1",
            pause="3.10.2",
            gates={
                "DRAAdminAccess": GA_LOCKED,
                "DRAConsumableCapacity": GA,
                "DRADeviceBindingConditions": GA_LOCKED,
                "DRADeviceTaintRules": GA_LOCKED,
                "DRADeviceTaints": GA_LOCKED,
                "DRAExtendedResource": GA_LOCKED,
                "DRAPartitionableDevices": GA_LOCKED,
                "DRAPrioritizedList": GA_LOCKED,
                "DRAResourceClaimDeviceStatus": GA_LOCKED,
                "ResourceHealthStatus": BETA_ON,
            },
            device_taint_rule_versions=("v1", "v1beta2", "v1alpha3"),
            substitutes=("sigs.k8s.io/iptables-wrappers",),
        ),
    )
}


def minor_of(version: str) -> str:
    """'v1.37.2' -> '1.37'."""
    parsed = kube_version.minor(version)
    if parsed is None:
        raise ValueError(f"not a Kubernetes version: {version!r} (expected like v1.37.2)")
    return "{}.{}".format(*parsed)


def release_for(version: str) -> Release:
    """The table row of `version`'s minor (another patch of it is assumed to pin the same)."""
    minor = minor_of(version)
    if minor not in RELEASES:
        supported = ", ".join(sorted(RELEASES, key=_numeric))
        raise ValueError(f"Kubernetes {version} is not supported (supported minors: {supported})")
    return RELEASES[minor]


def _numeric(version: str) -> tuple[int, ...]:
    """'1.26.0' / 'go1.26.8' / '1.27rc1' -> a comparable tuple of its leading numbers."""
    numbers = []
    for part in version.removeprefix("go").split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        numbers.append(int(digits))
    return tuple(numbers)


def go_too_old(release: Release, go_version: str) -> bool:
    """Does the local Go (`go env GOVERSION`, e.g. go1.26.8) predate the release's go.mod?"""
    have, need = _numeric(go_version), _numeric(release.go_directive)
    return have[:3] + (0,) * (3 - len(have[:3])) < need[:3] + (0,) * (3 - len(need[:3]))
