"""A profile's cluster block on real kind clusters: applied when the suite makes the cluster
(an alpha gate, a kubelet field, a worker label, NRI, a CDI directory, a mount), recorded so a
profile asking for another block cannot reuse the cluster, and checked before anything runs
on a cluster the suite did not make (`--cluster existing`, `profile check`): exit 2, one line;
containerd's settings and the mounts there only through the profile's nodeCommands.exec.

A cluster of its own (one worker, about 2 minutes on 2 cores), deleted at the end.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
import yaml

from conformance.cluster import kind
from conformance.errors import ClusterError
from conformance.model.cluster_block import DIGEST_LABEL
from conformance.model.feature_gates import gates_from_metrics
from conformance.model.profile import SUITE_ROOT, Profile
from conformance.model.profile_parse import load_profile
from conformance.progress import Progress

pytestmark = pytest.mark.e2e_by_hand

# The tier's cluster name (DRA_CONFORMANCE_E2E_CLUSTER, tests/e2e/conftest.py), suffixed.
NAME = os.environ.get("DRA_CONFORMANCE_E2E_CLUSTER", "dra-conformance-e2e") + "-block"
FAKE_PROFILE = SUITE_ROOT / "drivers/fake/profile.yaml"
GATE = "DRAListTypeAttributes"  # alpha in 1.37: off unless asked for
MISSING_GATE = "DRANodeAllocatableResources"  # alpha in 1.37 too, not asked for
LABEL = ("example.com/pool", "cpu")
MOUNTED = "/mnt/dra-host"
BLOCK: dict[str, Any] = {
    "featureGates": {GATE: True},
    "kubelet": {"containerLogMaxFiles": 3},
    "containerd": {"nri": True, "cdiSpecDirs": ["/opt/dra-cdi"]},
    "nodeLabels": dict([LABEL]),
}


def profile_file(directory: Path, block: dict[str, Any], name: str, reach: bool = False) -> Path:
    """The fake driver's profile with `block`; `reach`: a vendor's way onto the nodes (here
    kind's node containers), with which containerd's settings and the mounts are checked."""
    document = yaml.safe_load(FAKE_PROFILE.read_text())
    document["install"] = {"method": "preinstalled"}  # the block is what is tested here
    document["cluster"] = block
    if reach:
        document["nodeCommands"] = {"exec": ["docker", "exec", "{node}"]}
    path = directory / name
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture(scope="module")
def host_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("mounted")
    (directory / "marker").write_text("from the host\n")
    return directory


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory, host_dir: Path) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("profiles")
    block = {**BLOCK, "extraMounts": [{"hostPath": str(host_dir), "containerPath": MOUNTED}]}
    lacking = copy.deepcopy(block)
    lacking["featureGates"][MISSING_GATE] = True
    lacking["containerd"]["cdiSpecDirs"].append("/opt/elsewhere-cdi")
    lacking["extraMounts"].append({"hostPath": str(host_dir), "containerPath": "/mnt/absent"})
    return {
        "made": profile_file(directory, block, "made.yaml"),
        "lacking": profile_file(directory, lacking, "lacking.yaml", reach=True),
        "reached": profile_file(directory, block, "reached.yaml", reach=True),
    }


@pytest.fixture(scope="module")
def made(profiles: dict[str, Path]) -> Profile:
    return load_profile(profiles["made"])


@pytest.fixture(scope="module")
def block_cluster(made: Profile) -> Iterator[kind.KindCluster]:
    cluster = kind.up(name=NAME, workers=1, requirements=made.cluster, progress=Progress())
    try:
        yield cluster
    finally:
        cluster.delete()


def worker(cluster: kind.KindCluster) -> str:
    [name] = [n for n in cluster.nodes() if not n.endswith("control-plane")]
    return name


def in_node(node: str, *argv: str) -> str:
    result = docker.from_env().containers.get(node).exec_run(list(argv))
    assert result.exit_code == 0, result.output.decode(errors="replace")
    return result.output.decode()


def test_the_gate_is_on_in_the_api_server_and_the_kubelet(block_cluster: kind.KindCluster) -> None:
    k8s = block_cluster.clients()
    assert gates_from_metrics(k8s.get_raw("/metrics", accept="text/plain"))[GATE] is True
    for node in block_cluster.nodes():
        metrics = k8s.get_raw(f"/api/v1/nodes/{node}/proxy/metrics", accept="text/plain")
        assert gates_from_metrics(metrics)[GATE] is True, node
        assert gates_from_metrics(metrics)[MISSING_GATE] is False, node


def test_the_kubelet_runs_with_the_blocks_field_and_the_suites(
    block_cluster: kind.KindCluster,
) -> None:
    k8s = block_cluster.clients()
    config = k8s.get_json(f"/api/v1/nodes/{worker(block_cluster)}/proxy/configz")
    assert config["kubeletconfig"]["containerLogMaxFiles"] == 3
    assert config["kubeletconfig"]["nodeStatusUpdateFrequency"] == "2s"  # the suite's, kept


def test_workers_carry_the_label_and_every_node_the_digest(
    block_cluster: kind.KindCluster, made: Profile
) -> None:
    nodes = block_cluster.clients().core.list_node().items
    labels = {n.metadata.name: n.metadata.labels for n in nodes}
    assert labels[worker(block_cluster)][LABEL[0]] == LABEL[1]
    assert {v.get(DIGEST_LABEL) for v in labels.values()} == {made.cluster.digest()}


def test_containerd_has_nri_and_the_cdi_directory_and_the_mount_is_there(
    block_cluster: kind.KindCluster,
) -> None:
    node = worker(block_cluster)
    dump = in_node(node, "containerd", "config", "dump")
    # containerd writes the plugin's key quoted either way ("..." or '...')
    nri = re.search(r"""\[plugins\.["']io\.containerd\.nri\.v1\.nri["']\]([^\[]*)""", dump)
    assert nri and re.search(r"disable\s*=\s*false", nri.group(1)), dump
    assert in_node(node, "test", "-S", "/var/run/nri/nri.sock") == ""
    match = re.search(r"cdi_spec_dirs\s*=\s*\[([^\]]*)\]", dump)
    assert match and "/opt/dra-cdi" in match.group(1) and "/var/run/cdi" in match.group(1), dump
    assert in_node(node, "cat", f"{MOUNTED}/marker") == "from the host\n"


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance.cli", *argv],
        capture_output=True,
        text=True,
        cwd=SUITE_ROOT,
        timeout=600,
    )


def test_a_profile_asking_for_another_block_does_not_reuse_the_cluster(
    block_cluster: kind.KindCluster, profiles: dict[str, Path]
) -> None:
    lacking = load_profile(profiles["lacking"])
    with pytest.raises(ClusterError, match=f"cluster {NAME} was made with another cluster block"):
        kind.up(name=NAME, requirements=lacking.cluster, progress=Progress())
    # the same profile reuses it
    assert kind.up(name=NAME, requirements=load_profile(profiles["made"]).cluster).name == NAME


def test_the_preflight_on_an_existing_cluster_names_what_it_lacks(
    block_cluster: kind.KindCluster, profiles: dict[str, Path], tmp_path: Path
) -> None:
    kubeconfig = str(block_cluster.kubeconfig)
    expected = (
        "the cluster lacks what the profile's cluster block asks for: the API server: "
        f"cluster.featureGates.{MISSING_GATE} is false (want true)"
    )
    run = cli(
        "run",
        "--profile",
        str(profiles["lacking"]),
        "--cluster",
        "existing",
        "--kubeconfig",
        kubeconfig,
        "--report-dir",
        str(tmp_path / "report"),
    )
    assert run.returncode == 2, run.stdout + run.stderr
    [line] = [ln for ln in (run.stdout + run.stderr).splitlines() if expected in ln]
    node = worker(block_cluster)
    assert f"node {node} (kubelet): cluster.featureGates.{MISSING_GATE}" in line
    assert (
        f"node {node} (containerd): cluster.containerd.cdiSpecDirs lacks /opt/elsewhere-cdi" in line
    )
    assert f"node {node}: cluster.extraMounts /mnt/absent does not exist on the node" in line
    check = cli("profile", "check", str(profiles["lacking"]), "--kubeconfig", kubeconfig)
    assert check.returncode == 2, check.stdout + check.stderr
    assert expected in check.stderr
    fine = cli("profile", "check", str(profiles["made"]), "--kubeconfig", kubeconfig)
    assert (
        "cluster block" not in fine.stdout + fine.stderr
    )  # the driver is not installed: its slices are reported, not the block
    assert "warning: every node: cluster.containerd.nri not checkable here" in fine.stdout
    reached = cli("profile", "check", str(profiles["reached"]), "--kubeconfig", kubeconfig)
    assert "cluster block" not in reached.stdout + reached.stderr
    assert "not checkable" not in reached.stdout  # read on the node, and as asked
