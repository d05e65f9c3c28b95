"""The profile's `cluster` block: typed, each bad field named in one line, a stable digest."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.model.cluster_block import DIGEST_LENGTH, ClusterRequirements, Mount
from conformance.model.profile import ProfileError
from conformance.model.profile_parse import load_profile

BASE: dict[str, Any] = {
    "apiVersion": "dra-conformance.io/v1alpha1",
    "kind": "DriverProfile",
    "driver": "cpu.example.com",
    "deviceClasses": {"default": "cpu.example.com"},
    "install": {"method": "preinstalled"},
    "verification": {"method": "env", "nameRegex": "^CPU_", "value": "device"},
}

BLOCK: dict[str, Any] = {
    "featureGates": {"DRAListTypeAttributes": True, "DRANodeAllocatableResources": True},
    "kubelet": {"cpuManagerPolicy": "none", "containerLogMaxFiles": 3},
    "containerd": {"nri": True, "cdiSpecDirs": ["/opt/cdi/"], "configPatches": ["[a]\nb = 1\n"]},
    "extraMounts": [{"hostPath": "/dev/null", "containerPath": "/dev/fake0", "readOnly": True}],
    "nodeLabels": {"example.com/pool": "cpu", "node-restriction.kubernetes.io/x": ""},
}


def load(tmp_path: Path, block: Any) -> Any:
    data = copy.deepcopy(BASE)
    if block is not None:
        data["cluster"] = block
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(data))
    return load_profile(tmp_path / "p.yaml")


def test_a_profile_without_the_block_requires_nothing(tmp_path: Path) -> None:
    cluster = load(tmp_path, None).cluster
    assert cluster.empty and cluster.digest() is None


def test_the_block_is_typed(tmp_path: Path) -> None:
    profile = load(tmp_path, BLOCK)
    cluster = profile.cluster
    assert dict(cluster.feature_gates) == BLOCK["featureGates"]
    assert dict(cluster.kubelet) == BLOCK["kubelet"]
    assert cluster.containerd.nri is True
    assert cluster.containerd.cdi_spec_dirs == ("/opt/cdi",)
    assert cluster.extra_mounts == (Mount("/dev/null", "/dev/fake0", True),)
    assert cluster.node_labels["example.com/pool"] == "cpu"
    # the runtime reads the configured spec directories: so does DRA-CORE-008
    assert profile.cdi.spec_dirs[-1] == "/opt/cdi"


def test_the_digest_is_stable_and_tells_blocks_apart(tmp_path: Path) -> None:
    digest = load(tmp_path, BLOCK).cluster.digest()
    assert digest is not None and len(digest) == DIGEST_LENGTH
    reordered = dict(reversed(list(BLOCK.items())))
    assert load(tmp_path, reordered).cluster.digest() == digest
    other = {**BLOCK, "kubelet": {"cpuManagerPolicy": "static"}}
    assert load(tmp_path, other).cluster.digest() != digest
    assert ClusterRequirements().digest() is None


BAD = [
    ({"featureGates": {"draX": True}}, "cluster.featureGates.draX: expected a feature gate"),
    (
        {"featureGates": {"DRAX": "yes"}},
        'cluster.featureGates.DRAX: expected true or false, got "yes"',
    ),
    ({"featureGates": ["DRAX"]}, "cluster.featureGates: expected a mapping, got a list"),
    (
        {"kubelet": {"featureGates": {}}},
        "cluster.kubelet.featureGates: 'featureGates' cannot be set here",
    ),
    ({"kubelet": {"kind": "x"}}, "cluster.kubelet.kind: 'kind' cannot be set here"),
    (
        {"kubelet": {"Cpu_policy": 1}},
        "cluster.kubelet.Cpu_policy: expected a KubeletConfiguration field",
    ),
    ({"containerd": {"nri": "on"}}, 'cluster.containerd.nri: expected true or false, got "on"'),
    (
        {"containerd": {"cdiSpecDirs": ["cdi"]}},
        "cluster.containerd.cdiSpecDirs[0]: expected an absolute directory",
    ),
    (
        {"containerd": {"configPatches": ["[a"]}},
        "cluster.containerd.configPatches[0]: not valid TOML",
    ),
    ({"containerd": {"runc": True}}, "cluster.containerd.runc: unknown field"),
    (
        {"extraMounts": [{"hostPath": "dev", "containerPath": "/d"}]},
        "cluster.extraMounts[0].hostPath: expected an absolute path",
    ),
    (
        {"extraMounts": [{"hostPath": "/d"}]},
        "cluster.extraMounts[0].containerPath: required field is missing",
    ),
    (
        {"extraMounts": [{"hostPath": "/d", "containerPath": "/d", "propagation": "none"}]},
        "cluster.extraMounts[0].propagation: expected one of None, HostToContainer, Bidirectional",
    ),
    (
        {"nodeLabels": {"node-role.kubernetes.io/worker": ""}},
        "cluster.nodeLabels.node-role.kubernetes.io/worker: 'node-role.kubernetes.io/worker': a "
        "kubelet may not",
    ),
    ({"nodeLabels": {"dra-conformance.io/cluster-block": "x"}}, "is the suite's own label"),
    ({"nodeLabels": {"a": 1}}, "cluster.nodeLabels.a: expected a label value"),
    ({"nodeLabels": {"a": "x" * 64}}, "cluster.nodeLabels.a: expected a label value"),
    ({"nodes": {}}, "cluster.nodes: unknown field"),
]


@pytest.mark.parametrize("block,expected", BAD, ids=[e.split(":")[0] for _, e in BAD])
def test_a_bad_field_is_one_line_naming_it(tmp_path: Path, block: Any, expected: str) -> None:
    with pytest.raises(ProfileError) as err:
        load(tmp_path, block)
    assert len(err.value.problems) == 1
    assert expected in err.value.problems[0]
    assert "\n" not in err.value.problems[0]
