"""The kind cluster configuration for DRA: feature gates per release, kubeadm patches, nodes.

Pure functions of (version, options) so they are unit-tested without a cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from conformance.cluster import kind_block
from conformance.images import releases
from conformance.images.releases import minor_of as minor_of  # re-exported
from conformance.model.cluster_block import ClusterRequirements
from conformance.model.component_metrics import READABLE_METRICS_ARGS

# Gates to switch on and API versions to serve per minor release, derived from the release
# table (releases.py), whose facts were read from each release's sources.
DRA_FEATURE_GATES: dict[str, tuple[str, ...]] = {
    minor: r.feature_gates() for minor, r in releases.RELEASES.items()
}
DRA_RUNTIME_CONFIG: dict[str, dict[str, str]] = {
    minor: r.runtime_config() for minor, r in releases.RELEASES.items()
}

CDI_CONTAINERD_PATCH = """[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
"""

RESTRICT_OOM_PATCH = """[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
"""


def feature_gates(version: str) -> dict[str, bool]:
    return {gate: True for gate in releases.release_for(version).feature_gates()}


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
    # What the profile's cluster block asks for (conformance/cluster/kind_block.py)
    requirements: ClusterRequirements = field(default_factory=ClusterRequirements)


# The label kubeadm puts on the control-plane node; every other node of the cluster is a worker.
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"

# The kubelet computes its node's status this often (default 10 s) and posts it when it changed
# (or every 5 minutes, the default once the frequency is set): a device plugin's capacity
# reaches status.allocatable only then. DRA-EXT-006 waits for it twice while it holds both
# nodes (measured: 10 s and 14 s of its 31 s lease).
NODE_STATUS_UPDATE = "2s"
NODE_STATUS_REPORT = "5m"


# Every etcd write otherwise ends in an fdatasync of its write-ahead log: on ext4 each is an
# extent conversion and a journal commit in kernel workers (without them a broken-driver shard
# used 13% less CPU, bench/suite.md). A kind cluster is thrown away, never recovered after a
# host crash (a node container's restart keeps the page cache), so its etcd leaves the
# flushing to the kernel's writeback.
ETCD_NO_FSYNC_PATCH = """kind: ClusterConfiguration
etcd:
  local:
    extraArgs:
      - name: unsafe-no-fsync
        value: "true"
"""


# One control plane: leader election buys nothing, and kube-controller-manager and
# kube-scheduler would each renew a Lease every 2 s (an API write and an etcd commit; about
# 1.5% of a core per idle cluster, bench/cluster.md). Without it a restarted scheduler also
# schedules at once instead of waiting for its old lease to run out.
NO_LEADER_ELECTION = {"leader-elect": "false"}


# On top of kubeadm's: no leader election, and /metrics readable through the API server's pod
# proxy, so a run's driver operations have the scheduler's DynamicResources and the claim
# controller's figures. The cluster is the suite's own and thrown away: an anonymous /metrics
# on its node's address exposes nothing worth keeping.
CONTROL_PLANE_ARGS: dict[str, str] = {**NO_LEADER_ELECTION, **READABLE_METRICS_ARGS}
# kube-controller-manager and kube-scheduler, as kubeadm's ClusterConfiguration names them
CONTROL_PLANE_COMPONENTS = ("controllerManager", "scheduler")


def control_plane_args_patch(version: str) -> dict[str, str]:
    """A JSON 6902 patch adding CONTROL_PLANE_ARGS to kubeadm's ClusterConfiguration. kind
    writes kubeadm's v1beta4 (extraArgs a list, which a merge patch would replace with its
    feature gates in it) from 1.36 on, v1beta3 (a map) before."""
    major, minor = (int(n) for n in minor_of(version).split("."))
    if (major, minor) >= (1, 36):
        api = "v1beta4"
        operations = [
            (f"/{component}/extraArgs/-", {"name": name, "value": value})
            for component in CONTROL_PLANE_COMPONENTS
            for name, value in CONTROL_PLANE_ARGS.items()
        ]
    else:
        api = "v1beta3"
        operations = [
            (f"/{component}/extraArgs/{name}", value)
            for component in CONTROL_PLANE_COMPONENTS
            for name, value in CONTROL_PLANE_ARGS.items()
        ]
    return {
        "group": "kubeadm.k8s.io",
        "version": api,
        "kind": "ClusterConfiguration",
        "patch": "".join(
            f"- op: add\n  path: {path}\n  value: {json.dumps(value)}\n"
            for path, value in operations
        ),
    }


def kubeadm_patches(opts: ClusterOptions) -> list[str]:
    suite: dict[str, object] = {
        "nodeStatusUpdateFrequency": NODE_STATUS_UPDATE,
        "nodeStatusReportFrequency": NODE_STATUS_REPORT,
    }
    if opts.cgroup_v1:
        # kubelet >= 1.35 refuses cgroup v1 unless told otherwise; kind does not set this.
        suite["failCgroupV1"] = False
    fields = kind_block.kubelet_fields(suite, opts.requirements)
    kubelet = yaml.safe_dump({"kind": "KubeletConfiguration", **fields}, sort_keys=False)
    patches = [kubelet, ETCD_NO_FSYNC_PATCH]
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
        "featureGates": kind_block.gates(
            feature_gates(opts.kubernetes), opts.requirements, opts.kubernetes
        ),
        "networking": {"kubeProxyMode": "iptables"},
        "containerdConfigPatches": [CDI_CONTAINERD_PATCH],
        "nodes": kind_block.nodes(opts.workers, opts.requirements),
    }
    if opts.restrict_oom_score_adj:
        config["containerdConfigPatches"].append(RESTRICT_OOM_PATCH)
    config["containerdConfigPatches"] += kind_block.containerd_patches(opts.requirements)
    runtime_config = releases.release_for(opts.kubernetes).runtime_config()
    if runtime_config:
        config["runtimeConfig"] = dict(runtime_config)
    if opts.offline:
        # kindnetd needs a registry; the offline node image brings its own pod network.
        config["networking"]["disableDefaultCNI"] = True
    patches = kubeadm_patches(opts)
    if patches:
        config["kubeadmConfigPatches"] = patches
    config["kubeadmConfigPatchesJSON6902"] = [control_plane_args_patch(opts.kubernetes)]
    return config


def render(opts: ClusterOptions) -> str:
    return yaml.safe_dump(kind_config(opts), sort_keys=False)
