"""The cluster block against what a cluster shows: one line per missing setting, naming the
node and the setting; what the API cannot show is a warning, never missing."""

from __future__ import annotations

import pytest

from conformance.model.cluster_block import ClusterRequirements, ContainerdSettings, Mount
from conformance.model.cluster_block_check import (
    gate_findings,
    kubelet_findings,
    label_findings,
    missing_line,
    mount_findings,
    mount_script,
    runtime_findings,
    same,
    unchecked_findings,
)
from conformance.model.frozen import FrozenMap

BLOCK = ClusterRequirements(
    feature_gates=FrozenMap({"DRAListTypeAttributes": True, "DRAOld": False}),
    kubelet=FrozenMap(
        {
            "containerLogMaxFiles": 3,
            "nodeStatusReportFrequency": "5m",
            "evictionHard": {"memory.available": "1Mi"},
        }
    ),
    node_labels=FrozenMap({"example.com/pool": "cpu"}),
)


def test_gates_as_asked_are_fine() -> None:
    gates = {"DRAListTypeAttributes": True, "DRAOld": False, "Other": True}
    assert gate_findings("the API server", gates, BLOCK) == []


def test_a_gate_off_or_unknown_is_missing_where_it_was_read() -> None:
    found = gate_findings("node w1 (kubelet)", {"DRAListTypeAttributes": False}, BLOCK)
    assert [f.line() for f in found] == [
        "node w1 (kubelet): cluster.featureGates.DRAListTypeAttributes is false (want true)",
        "node w1 (kubelet): cluster.featureGates.DRAOld is unknown there (want false)",
    ]
    assert {f.severity for f in found} == {"missing"}


def test_unread_gates_are_a_warning_with_the_reason() -> None:
    [finding] = gate_findings("the API server", None, BLOCK, "GET /metrics failed (HTTP 403)")
    assert finding.severity == "unchecked"
    assert "GET /metrics failed (HTTP 403)" in finding.line()
    assert gate_findings("x", None, ClusterRequirements()) == []


CONFIGZ = {
    "containerLogMaxFiles": 3,
    "nodeStatusReportFrequency": "5m0s",
    "evictionHard": {"memory.available": "1Mi", "nodefs.available": "10%"},
    "cpuManagerPolicy": "none",
}


def test_kubelet_fields_compare_with_configz() -> None:
    assert kubelet_findings("w1", CONFIGZ, BLOCK) == []
    other = {**CONFIGZ, "containerLogMaxFiles": 5}
    del other["evictionHard"]
    lines = [f.line() for f in kubelet_findings("w1", other, BLOCK)]
    assert lines == [
        "node w1: cluster.kubelet.containerLogMaxFiles is 5 (want 3)",
        "node w1: cluster.kubelet.evictionHard is not set in its kubelet's configuration "
        '(want {"memory.available": "1Mi"})',
    ]


@pytest.mark.parametrize(
    ("wanted", "actual", "equal"),
    [
        ("5m", "5m0s", True),
        ("90s", "1m30s", True),
        ("none", "static", False),
        (3, 3.0, True),
        (True, 1, False),
        ([1, 2], [1, 2], True),
        ([1], [1, 2], False),
        ({"a": 1}, {"a": 1, "b": 2}, True),
        ({"a": 1}, "a", False),
    ],
)
def test_same(wanted: object, actual: object, equal: bool) -> None:
    assert same(wanted, actual) is equal


def test_labels() -> None:
    assert label_findings("w1", {"example.com/pool": "cpu"}, BLOCK) == []
    [missing] = label_findings("w1", {}, BLOCK)
    assert missing.line() == "node w1: cluster.nodeLabels.example.com/pool is missing (want 'cpu')"
    [wrong] = label_findings("w1", {"example.com/pool": "gpu"}, BLOCK)
    assert "is 'gpu' (want 'cpu')" in wrong.line()


def test_runtime_and_mounts_are_not_checkable_here() -> None:
    block = ClusterRequirements(
        containerd=ContainerdSettings(nri=False, cdi_spec_dirs=("/opt/cdi",)),
        extra_mounts=(Mount("/a", "/b"),),
    )
    found = unchecked_findings(block)
    assert [f.setting for f in found] == [
        "cluster.containerd.nri",
        "cluster.containerd.cdiSpecDirs",
        "cluster.extraMounts",
    ]
    assert {f.severity for f in found} == {"unchecked"}
    assert missing_line(found) is None
    assert unchecked_findings(BLOCK) == []


def test_every_missing_setting_is_on_one_line() -> None:
    found = label_findings("w1", {}, BLOCK) + label_findings("w2", {}, BLOCK)
    line = missing_line(found + unchecked_findings(ClusterRequirements()))
    assert line == (
        "the cluster lacks what the profile's cluster block asks for: node w1: "
        "cluster.nodeLabels.example.com/pool is missing (want 'cpu') (and 1 more: node w2: "
        "cluster.nodeLabels.example.com/pool is missing (want 'cpu'))"
    )


# As `containerd config dump` prints a version 3 configuration (abridged).
DUMP_V3 = """version = 3

[plugins]
  [plugins.'io.containerd.cri.v1.runtime']
    cdi_spec_dirs = ['/etc/cdi', '/var/run/cdi', '/opt/dra-cdi']

  [plugins.'io.containerd.nri.v1.nri']
    disable = false
    socket_path = '/var/run/nri/nri.sock'
"""
RUNTIME = ClusterRequirements(
    containerd=ContainerdSettings(nri=True, cdi_spec_dirs=("/opt/dra-cdi",)),
    extra_mounts=(Mount("/a", "/host/a b"),),
)


def test_containerd_as_asked_is_fine() -> None:
    assert runtime_findings("w1", DUMP_V3, RUNTIME) == []


def test_nri_off_and_a_missing_cdi_directory_are_missing_on_the_node() -> None:
    dump = DUMP_V3.replace("disable = false", "disable = true").replace(", '/opt/dra-cdi'", "")
    lines = [f.line() for f in runtime_findings("w1", dump, RUNTIME)]
    assert lines == [
        "node w1 (containerd): cluster.containerd.nri is off (want on)",
        "node w1 (containerd): cluster.containerd.cdiSpecDirs lacks /opt/dra-cdi "
        "(it reads /etc/cdi, /var/run/cdi)",
    ]
    [absent] = runtime_findings("w1", "version = 3\n", RUNTIME)[:1]
    assert absent.detail == "is absent (want on)"


def test_mounts_are_looked_for_by_a_script_whose_output_names_the_absent_ones() -> None:
    assert mount_script(RUNTIME) == "[ -e '/host/a b' ] || echo '/host/a b'; true"
    assert mount_findings("w1", "") == []
    [missing] = mount_findings("w1", "/host/a b\n")
    assert missing.line() == "node w1: cluster.extraMounts /host/a b does not exist on the node"


def test_with_a_way_onto_the_nodes_only_config_patches_stay_unchecked() -> None:
    block = ClusterRequirements(
        containerd=ContainerdSettings(nri=True, config_patches=("[a]\n",)),
        extra_mounts=(Mount("/a", "/b"),),
    )
    assert [f.setting for f in unchecked_findings(block, reachable=True)] == [
        "cluster.containerd.configPatches"
    ]
    assert len(unchecked_findings(block)) == 3
