"""`kind create cluster` on a loaded host: its arguments, kubeadm's lengthened waits, and the
one line a failed creation prints (the cluster and kind's reason, never `--name failed:`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conformance.cluster.kind_create import (
    MAX_LOAD_SCALE,
    CreateWaits,
    create_args,
    failure_reason,
    human_size,
    kubeadm_wait_patches,
    load_scale,
    retry_line,
    tree_size,
)
from conformance.errors import ClusterError

# kind v0.33's stderr when kubeadm's wait-control-plane ran out of time (CI, load 60 on 2 cores)
WAIT_CONTROL_PLANE = """\
Creating cluster "dra-conformance-e2e" ...
 ✓ Ensuring node image (localhost/dra-conformance/node:v1.37.2) 🖼
 ✗ Starting control-plane 🕹️
Deleted nodes: ["dra-conformance-e2e-control-plane"]
ERROR: failed to create cluster: failed to init node with kubeadm: command "docker exec \
--privileged dra-conformance-e2e-control-plane kubeadm init --config=/kind/kubeadm.conf \
--skip-token-print --v=6" failed with error: exit status 1
Command Output: I1207 10:01:02.000000     199 initconfiguration.go:260] loading configuration
[wait-control-plane] Waiting for the kubelet to boot up the control plane as static Pods
	k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/workflow.(*Runner).Run.func1
error execution phase wait-control-plane: failed while waiting for the control plane to \
start: kube-apiserver check failed at https://172.18.0.3:6443/livez: context deadline exceeded
To see the stack trace of this error execute with --v=5 or higher
"""


def test_the_reason_is_kubeadm_phase_and_cause() -> None:
    reason = failure_reason(WAIT_CONTROL_PLANE)
    assert reason.startswith("ERROR: failed to create cluster: failed to init node with kubeadm")
    assert reason.endswith("livez: context deadline exceeded")
    assert " | error execution phase wait-control-plane" in reason
    assert "stack trace" not in reason and ".go:" not in reason and "\n" not in reason


def test_a_long_reason_is_cut_and_no_output_is_said() -> None:
    assert len(failure_reason("error: " + "x" * 1000, limit=100)) == 100
    assert failure_reason("") == "kind printed nothing"
    assert failure_reason("just one line\n") == "just one line"


def test_the_retry_line_names_the_cluster_and_the_reason() -> None:
    error = ClusterError(
        "cluster ci-1 did not come up: `kind create cluster` of ci-1 failed: "
        + failure_reason(WAIT_CONTROL_PLANE)
        + "\nmore lines",
        "node logs (12.0 MB): /x",
    )
    line = retry_line(error, 1, 2)
    assert line.startswith("cluster ci-1 did not come up: `kind create cluster` of ci-1 failed: ")
    assert "context deadline exceeded (attempt 1 of 2); creating it once more" in line
    assert "--name failed" not in line and "more lines" not in line


@pytest.mark.parametrize(
    ("load1", "cpus", "scale"),
    [(0.3, 2, 1.0), (2.0, 2, 1.0), (5.0, 2, 2.5), (115.0, 2, MAX_LOAD_SCALE), (9.0, 0, 3.0)],
)
def test_waits_grow_with_the_load_per_core(load1: float, cpus: int, scale: float) -> None:
    assert load_scale(load1, cpus) == scale


def test_the_command_outlasts_kubeadm_and_the_ready_wait() -> None:
    idle, loaded = CreateWaits(1.0), CreateWaits(2.5)
    assert idle.kubeadm_s == 480 and loaded.kubeadm_s == 1200
    assert loaded.command_s > 2 * loaded.kubeadm_s
    assert loaded.nodes_ready_s == 600


def test_the_arguments_name_the_cluster_and_keep_failed_nodes() -> None:
    args = create_args("c1", "img:v1", "/tmp/c.yaml", Path("/k/kubeconfig"), CreateWaits(2.0))
    assert args[:4] == ["create", "cluster", "--name", "c1"]
    assert "--wait" not in args  # an offline cluster's nodes are Ready only after it
    assert args[args.index("--image") + 1] == "img:v1"
    assert args[args.index("--kubeconfig") + 1] == "/k/kubeconfig"
    assert "--retain" in args


def test_v1beta4_gets_kubeadm_timeouts_for_init_and_join() -> None:
    init, join = (yaml.safe_load(p) for p in kubeadm_wait_patches("v1.37.2", 600))
    assert init == {
        "kind": "InitConfiguration",
        "timeouts": {"controlPlaneComponentHealthCheck": "600s", "kubeletHealthCheck": "600s"},
    }
    assert join["kind"] == "JoinConfiguration"
    assert join["timeouts"] == {
        "kubeletHealthCheck": "600s",
        "tlsBootstrap": "600s",
        "discovery": "600s",
    }


def test_v1beta3_gets_the_control_plane_timeout() -> None:
    (patch,) = kubeadm_wait_patches("v1.35.4", 600)
    assert yaml.safe_load(patch) == {
        "kind": "ClusterConfiguration",
        "apiServer": {"timeoutForControlPlane": "600s"},
    }


def test_the_logs_size_is_measured(tmp_path: Path) -> None:
    (tmp_path / "node").mkdir()
    (tmp_path / "node/kubelet.log").write_bytes(b"x" * 3 * 1024 * 1024)
    (tmp_path / "kind-version.txt").write_bytes(b"y" * 2048)
    assert tree_size(tmp_path) == 3 * 1024 * 1024 + 2048
    assert human_size(tree_size(tmp_path)) == "3.0 MB"
    assert human_size(2048) == "2 KB"
