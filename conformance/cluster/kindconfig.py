"""The kind cluster configuration for DRA: feature gates per release, kubeadm patches, nodes.

Pure functions of (version, options) so they are unit-tested without a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

# Gates to switch on per minor release: DRA features that are not on by default there (or are
# beta and we want them on explicitly). Every name was checked against that release's
# pkg/features/kube_features.go: a removed gate stops the components from starting, and a
# GA-locked gate must not be listed.
DRA_FEATURE_GATES: dict[str, tuple[str, ...]] = {
    "1.35": (
        "DRAPartitionableDevices",
        "DRAConsumableCapacity",
        "DRADeviceBindingConditions",
        "ResourceHealthStatus",
        "DRADeviceTaints",
        "DRADeviceTaintRules",
        "DRAExtendedResource",
    ),
    "1.36": (
        "DRAPartitionableDevices",
        "DRAConsumableCapacity",
        "DRADeviceBindingConditions",
        "ResourceHealthStatus",
        "DRADeviceTaints",
        "DRADeviceTaintRules",
        "DRAExtendedResource",
    ),
    # 1.37: DeviceTaints, DeviceTaintRules and ExtendedResource are GA; these four are beta.
    "1.37": (
        "DRAPartitionableDevices",
        "DRAConsumableCapacity",
        "DRADeviceBindingConditions",
        "ResourceHealthStatus",
    ),
}

# API versions that must be switched on for DeviceTaintRule where it is not in v1 yet.
DRA_RUNTIME_CONFIG: dict[str, dict[str, str]] = {
    "1.35": {"resource.k8s.io/v1alpha3": "true"},
    "1.36": {"resource.k8s.io/v1beta2": "true"},
    "1.37": {},
}

CDI_CONTAINERD_PATCH = """[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
"""

RESTRICT_OOM_PATCH = """[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
"""


def minor_of(version: str) -> str:
    """'v1.37.2' -> '1.37'."""
    parts = version.removeprefix("v").split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ValueError(f"not a Kubernetes version: {version!r} (expected like v1.37.2)")
    return f"{parts[0]}.{parts[1]}"


def feature_gates(version: str) -> dict[str, bool]:
    minor = minor_of(version)
    if minor not in DRA_FEATURE_GATES:
        supported = ", ".join(sorted(DRA_FEATURE_GATES))
        raise ValueError(f"Kubernetes {version} is not supported (supported minors: {supported})")
    return {gate: True for gate in DRA_FEATURE_GATES[minor]}


def host_uses_cgroup_v1(root: Path = Path("/sys/fs/cgroup")) -> bool:
    return not (root / "cgroup.controllers").exists()


@dataclass(frozen=True)
class ClusterOptions:
    name: str = "dra-conformance"
    workers: int = 2
    kubernetes: str = "v1.37.2"
    offline: bool = True
    cgroup_v1: bool = False
    # Without CAP_SYS_RESOURCE nobody in the node may lower an oom_score_adj; runc then fails
    # on every pod with "can't get final child's PID from pipe". Clamp instead (rootless kind
    # does the same).
    restrict_oom_score_adj: bool = False


def kubeadm_patches(opts: ClusterOptions) -> list[str]:
    patches = []
    if opts.cgroup_v1:
        # kubelet >= 1.35 refuses cgroup v1 unless told otherwise; kind does not set this.
        patches.append("kind: KubeletConfiguration\nfailCgroupV1: false\n")
    if opts.offline:
        # No CoreDNS image offline. skipPhases is replaced, not merged, so keep preflight.
        patches.append('kind: InitConfiguration\nskipPhases: ["preflight", "addon/coredns"]\n')
    return patches


def kind_config(opts: ClusterOptions) -> dict:
    if opts.workers < 1:
        raise ValueError("a DRA cluster needs at least one worker node")
    config: dict = {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "name": opts.name,
        "featureGates": feature_gates(opts.kubernetes),
        "networking": {"kubeProxyMode": "iptables"},
        "containerdConfigPatches": [CDI_CONTAINERD_PATCH],
        "nodes": [{"role": "control-plane"}] + [{"role": "worker"}] * opts.workers,
    }
    if opts.restrict_oom_score_adj:
        config["containerdConfigPatches"].append(RESTRICT_OOM_PATCH)
    runtime_config = DRA_RUNTIME_CONFIG[minor_of(opts.kubernetes)]
    if runtime_config:
        config["runtimeConfig"] = dict(runtime_config)
    if opts.offline:
        # kindnetd needs a registry; the offline node image brings its own pod network.
        config["networking"]["disableDefaultCNI"] = True
    patches = kubeadm_patches(opts)
    if patches:
        config["kubeadmConfigPatches"] = patches
    return config


def render(opts: ClusterOptions) -> str:
    return yaml.safe_dump(kind_config(opts), sort_keys=False)
