"""A profile's cluster block in the kind config: combined with what the suite sets, and a
clear one-line error where it would undo what the suite needs."""

from __future__ import annotations

import tomllib

import pytest
import yaml

from conformance.cluster.kind_block import BlockConflict, check_reused_block
from conformance.cluster.kindconfig import ClusterOptions, kind_config
from conformance.errors import ClusterError
from conformance.model.cluster_block import (
    DIGEST_LABEL,
    ClusterRequirements,
    ContainerdSettings,
    Mount,
)
from conformance.model.frozen import FrozenMap

BLOCK = ClusterRequirements(
    feature_gates=FrozenMap({"DRAListTypeAttributes": True, "DRAConsumableCapacity": True}),
    kubelet=FrozenMap({"containerLogMaxFiles": 3, "nodeStatusUpdateFrequency": "2s"}),
    containerd=ContainerdSettings(nri=True, cdi_spec_dirs=("/opt/cdi",)),
    extra_mounts=(Mount("/dev/null", "/dev/fake0", read_only=True),),
    node_labels=FrozenMap({"example.com/pool": "cpu"}),
)


def config_for(block: ClusterRequirements, **options: object) -> dict:
    return kind_config(ClusterOptions(requirements=block, **options))  # type: ignore[arg-type]


def kubelet_patch(config: dict) -> dict:
    patches = [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]]
    return next(p for p in patches if p["kind"] == "KubeletConfiguration")


def test_an_empty_block_leaves_the_suites_config_as_it_was() -> None:
    config = config_for(ClusterRequirements())
    assert config["nodes"] == [{"role": "control-plane"}, {"role": "worker"}, {"role": "worker"}]
    assert len(config["containerdConfigPatches"]) == 1


def test_the_blocks_gates_join_the_suites_dra_gates() -> None:
    gates = config_for(BLOCK)["featureGates"]
    assert gates["DRAListTypeAttributes"] is True
    assert gates["DRADeviceBindingConditions"] is True  # the suite's, kept


def test_kubelet_fields_are_merged_into_the_suites_kubelet_configuration() -> None:
    kubelet = kubelet_patch(config_for(BLOCK, cgroup_v1=True))
    assert kubelet == {
        "kind": "KubeletConfiguration",
        "nodeStatusUpdateFrequency": "2s",
        "nodeStatusReportFrequency": "5m",
        "failCgroupV1": False,
        "containerLogMaxFiles": 3,
    }


def test_containerd_settings_become_config_patches_that_parse() -> None:
    patches = [tomllib.loads(p) for p in config_for(BLOCK)["containerdConfigPatches"]]
    assert patches[0]["plugins"]["io.containerd.grpc.v1.cri"]["enable_cdi"] is True
    assert {"plugins": {"io.containerd.nri.v1.nri": {"disable": False}}} in patches
    dirs = next(p for p in patches if "cdi_spec_dirs" in str(p))
    assert dirs["plugins"]["io.containerd.grpc.v1.cri"]["cdi_spec_dirs"] == [
        "/etc/cdi",
        "/var/run/cdi",
        "/opt/cdi",
    ]
    off = ClusterRequirements(containerd=ContainerdSettings(nri=False, config_patches=("[x]\n",)))
    patches = config_for(off)["containerdConfigPatches"]
    assert "disable = true" in patches[1] and patches[2] == "[x]\n"


def test_workers_get_the_mounts_and_labels_and_every_node_the_digest() -> None:
    control, *workers = config_for(BLOCK, workers=3)["nodes"]
    digest = BLOCK.digest()
    assert control == {"role": "control-plane", "labels": {DIGEST_LABEL: digest}}
    assert len(workers) == 3
    for worker in workers:
        assert worker["extraMounts"] == [
            {"hostPath": "/dev/null", "containerPath": "/dev/fake0", "readOnly": True}
        ]
        assert worker["labels"] == {"example.com/pool": "cpu", DIGEST_LABEL: digest}
    assert workers[0] is not workers[1]


@pytest.mark.parametrize(
    ("block", "says"),
    [
        (
            ClusterRequirements(feature_gates=FrozenMap({"DRAConsumableCapacity": False})),
            "cluster.featureGates.DRAConsumableCapacity: false turns off a gate the suite "
            "needs on Kubernetes 1.37; remove it from the profile",
        ),
        (
            ClusterRequirements(feature_gates=FrozenMap({"DRAExtendedResource": False})),
            "cluster.featureGates.DRAExtendedResource: the gate is GA and locked on",
        ),
        (
            ClusterRequirements(kubelet=FrozenMap({"nodeStatusUpdateFrequency": "10s"})),
            'cluster.kubelet.nodeStatusUpdateFrequency: "10s" differs from the "2s" the '
            "suite's clusters need",
        ),
        (
            ClusterRequirements(
                containerd=ContainerdSettings(
                    config_patches=('[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = false',)
                )
            ),
            "cluster.containerd.configPatches[0]: enable_cdi = false turns off CDI",
        ),
    ],
)
def test_what_would_undo_the_suites_settings_is_a_one_line_conflict(
    block: ClusterRequirements, says: str
) -> None:
    with pytest.raises(BlockConflict) as err:
        config_for(block)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_gate_the_suite_sets_on_may_be_asked_for_on_again() -> None:
    block = ClusterRequirements(feature_gates=FrozenMap({"DRAConsumableCapacity": True}))
    assert config_for(block)["featureGates"]["DRAConsumableCapacity"] is True


def test_a_reused_cluster_must_have_been_made_with_the_profiles_block() -> None:
    check_reused_block("c", {BLOCK.digest()}, BLOCK)
    check_reused_block("c", {None}, ClusterRequirements())  # made without a block, asked none
    with pytest.raises(ClusterError) as err:
        check_reused_block("c", {None}, BLOCK)
    assert str(err.value.problem) == (
        f"cluster c was made with another cluster block (its nodes' {DIGEST_LABEL}: none; "
        f"the profile's: {BLOCK.digest()})"
    )
    assert "dra-conformance cluster down --name c" in err.value.remedy
    with pytest.raises(ClusterError, match="its nodes' .*: [0-9a-f]+, none;"):
        check_reused_block("c", {None, BLOCK.digest()}, BLOCK)  # a node added by hand
    with pytest.raises(ClusterError, match="the profile's: none"):
        check_reused_block("c", {BLOCK.digest()}, ClusterRequirements())


def test_cluster_up_takes_a_profile_for_its_block() -> None:
    from conformance.cli import app

    parser = app.build_parser([])
    args = app.parse_args(parser, ["cluster", "up", "--profile", "p.yaml"])
    assert args.profile == "p.yaml"
    assert app.parse_args(parser, ["cluster", "up"]).profile is None
