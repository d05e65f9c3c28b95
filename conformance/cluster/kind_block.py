"""A profile's cluster block (conformance.model.cluster_block) in the kind config the suite
writes: its gates beside the suite's DRA gates, its kubelet fields in the suite's
KubeletConfiguration patch, its containerd settings as config patches, its mounts and labels on
every worker, and the block's digest as a label on every node (kind.check_reused_block reads it).

Pure functions, unit-tested on the generated config. What the suite itself needs wins: a
profile value that would undo it is a BlockConflict, one line naming the field.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from typing import Any

from conformance.errors import ClusterError
from conformance.images import releases
from conformance.model.cdi_paths import DEFAULT_SPEC_DIRS
from conformance.model.cluster_block import DIGEST_LABEL, ClusterRequirements

CRI_PLUGIN = "io.containerd.grpc.v1.cri"
NRI_PLUGIN = "io.containerd.nri.v1.nri"


class BlockConflict(ValueError):
    """The profile's cluster block asks for what the suite cannot run with."""


def gates(suite: Mapping[str, bool], block: ClusterRequirements, version: str) -> dict[str, bool]:
    """The suite's gates and the block's: the block may add gates, never turn one off that
    the suite turns on or that the release locked on."""
    stages = releases.release_for(version).gates
    merged = dict(suite)
    for gate, on in block.feature_gates.items():
        if not on and suite.get(gate):
            raise BlockConflict(
                f"cluster.featureGates.{gate}: false turns off a gate the suite needs on "
                f"Kubernetes {releases.minor_of(version)}; remove it from the profile"
            )
        if not on and stages.get(gate) == releases.GA_LOCKED:
            raise BlockConflict(
                f"cluster.featureGates.{gate}: the gate is GA and locked on in Kubernetes "
                f"{releases.minor_of(version)}: the components refuse false; remove it"
            )
        merged[gate] = on
    return merged


def kubelet_fields(suite: Mapping[str, Any], block: ClusterRequirements) -> dict[str, Any]:
    """The suite's KubeletConfiguration fields and the block's; a field both set must agree."""
    merged = dict(suite)
    for key, value in block.kubelet.items():
        if key in suite and suite[key] != value:
            raise BlockConflict(
                f"cluster.kubelet.{key}: {json.dumps(value)} differs from the "
                f"{json.dumps(suite[key])} the suite's clusters need; remove it from the profile"
            )
        merged[key] = value
    return merged


def containerd_patches(block: ClusterRequirements) -> list[str]:
    """TOML patches for containerd: NRI, the CDI spec directories, then the block's own."""
    settings = block.containerd
    patches = []
    if settings.nri is not None:
        patches.append(f'[plugins."{NRI_PLUGIN}"]\n  disable = {str(not settings.nri).lower()}\n')
    if settings.cdi_spec_dirs:
        dirs = list(dict.fromkeys(DEFAULT_SPEC_DIRS + settings.cdi_spec_dirs))
        patches.append(f'[plugins."{CRI_PLUGIN}"]\n  cdi_spec_dirs = {json.dumps(dirs)}\n')
    for i, patch in enumerate(settings.config_patches):
        cri = tomllib.loads(patch).get("plugins", {}).get(CRI_PLUGIN, {})
        if cri.get("enable_cdi") is False:
            raise BlockConflict(
                f"cluster.containerd.configPatches[{i}]: enable_cdi = false turns off CDI, "
                "which DRA drivers hand devices to containers with; remove it"
            )
        patches.append(patch)
    return patches


def node_labels(block: ClusterRequirements) -> dict[str, str]:
    """The labels of a worker: the block's, and its digest."""
    digest = block.digest()
    return {**block.node_labels, DIGEST_LABEL: digest} if digest else {}


def nodes(workers: int, block: ClusterRequirements) -> list[dict[str, Any]]:
    """kind's `nodes`: one control plane (carrying the digest too) and the workers."""
    digest = block.digest()
    control: dict[str, Any] = {"role": "control-plane"}
    if digest:
        control["labels"] = {DIGEST_LABEL: digest}
    worker: dict[str, Any] = {"role": "worker"}
    if block.extra_mounts:
        worker["extraMounts"] = [_mount(m) for m in block.extra_mounts]
    if node_labels(block):
        worker["labels"] = node_labels(block)
    return [control] + [dict(worker) for _ in range(workers)]


def _mount(mount: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"hostPath": mount.host_path, "containerPath": mount.container_path}
    if mount.read_only:
        out["readOnly"] = True
    if mount.propagation:
        out["propagation"] = mount.propagation
    return out


def check_reused_block(name: str, found: set[str | None], block: ClusterRequirements) -> None:
    """A reused cluster must have been made with the profile's block: its nodes' digest labels
    (none on a cluster made without a block) are the block's. Never re-created here: that
    would delete the user's cluster and what runs on it."""
    wanted = block.digest()
    if found == {wanted}:
        return
    made = ", ".join(sorted(d or "none" for d in found)) or "none"
    raise ClusterError(
        f"cluster {name} was made with another cluster block (its nodes' {DIGEST_LABEL}: "
        f"{made}; the profile's: {wanted or 'none'})",
        f"delete it first (dra-conformance cluster down --name {name}) or pick another --name",
    )
