"""Pods stuck on their image, for the tests of conformance/kube/harness_causes.py and
conformance/plugin/preflight.py: V1Pod models as the camelCase dicts the harness reads, the
status a kubelet writes for a pull that failed, and a run context around them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kube_apiserver.server import unique_name
from kubernetes import client

from conformance.model.profile_parse import load_profile
from conformance.run.context import ClusterInfo, RunContext

IMAGE = "localhost/dra-conformance/no-such-image:none"
PULL_MESSAGE = (
    f'failed to pull and unpack image "{IMAGE}": failed to resolve reference: '
    "dial tcp [::1]:80: connect: connection refused"
)


def container_state(
    waiting: str | None = None, message: str = "", **other: Any
) -> client.V1ContainerState:
    if waiting:
        return client.V1ContainerState(
            waiting=client.V1ContainerStateWaiting(reason=waiting, message=message or None)
        )
    return client.V1ContainerState(**other)


def container_status(
    name: str, state: client.V1ContainerState, **extra: Any
) -> client.V1ContainerStatus:
    return client.V1ContainerStatus(
        name=name, image=IMAGE, image_id="", ready=False, restart_count=0, state=state, **extra
    )


def pod(
    statuses: list[client.V1ContainerStatus] = (),  # type: ignore[assignment]
    init: list[client.V1ContainerStatus] | None = None,
    phase: str = "Pending",
    uid: str = "uid-1",
) -> dict[str, Any]:
    """A V1Pod as the camelCase dict the harness reads (K8sClients.to_dict)."""
    v1 = client.V1Pod(
        metadata=client.V1ObjectMeta(name="user", namespace="ns", uid=uid),
        spec=client.V1PodSpec(
            init_containers=[client.V1Container(name="setup", image="init:1")] if init else None,
            containers=[
                client.V1Container(name="main", image=IMAGE),
                client.V1Container(name="side", image="side:2"),
            ],
        ),
        status=client.V1PodStatus(
            phase=phase, container_statuses=list(statuses), init_container_statuses=init
        ),
    )
    return client.ApiClient().sanitize_for_serialization(v1)


ROOT = Path(__file__).resolve().parents[2]
PULL_FAILED = {
    "phase": "Pending",
    "containerStatuses": [
        {
            "name": "main",
            "image": IMAGE,
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "state": {"waiting": {"reason": "ImagePullBackOff", "message": PULL_MESSAGE}},
        }
    ],
}


def run_context(
    tmp_path: Path, kubeconfig: str = "/k", nodes: tuple[str, ...] = ("w1",), scale: float = 1.0
) -> RunContext:
    return RunContext(
        run_id=unique_name("run"),
        run_dir=tmp_path / "run",
        profile=load_profile(ROOT / "drivers" / "fake" / "profile.yaml"),
        cluster=ClusterInfo("existing", "c", kubeconfig, None, False),
        git_version="v1.37.2",
        served_resources={},
        feature_gates=None,
        feature_gates_error=None,
        nodes=nodes,
        devices=(),
        device_sets={},
        workload_image=IMAGE,
        timeout_scale=scale,
    )
