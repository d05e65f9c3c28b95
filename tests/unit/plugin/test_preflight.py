"""The preflight's account of its pod (pure: pods built from the client's V1Pod models): when
to give up, and the one line that says why."""

from __future__ import annotations

from helpers.pod_states import IMAGE, PULL_MESSAGE, container_state, container_status, pod
from kubernetes import client

from conformance.plugin.preflight import PreflightError, hopeless, pod_state_line


def test_the_preflight_gives_up_at_once_on_an_image_the_nodes_cannot_pull() -> None:
    reason = hopeless(
        pod([container_status("main", container_state("ErrImagePull", PULL_MESSAGE))])
    )
    assert reason == f"the nodes cannot pull it (ErrImagePull: {PULL_MESSAGE})"


def test_the_preflight_gives_up_when_the_workload_exits() -> None:
    exited = client.V1ContainerStateTerminated(exit_code=127, reason="Error")
    reason = hopeless(
        pod([container_status("main", container_state(terminated=exited))], phase="Failed")
    )
    assert (
        reason
        == "its container exited (Error, exit code 127): the image must have sh, env and sleep"
    )


def test_the_preflight_keeps_waiting_for_a_pod_on_its_way() -> None:
    assert hopeless(pod([container_status("main", container_state("ContainerCreating"))])) is None
    assert hopeless(pod()) is None


def test_describe_pod_is_one_line_with_phase_container_state_and_scheduling() -> None:
    stuck = pod([container_status("main", container_state("ContainerCreating", "pulling\nslowly"))])
    stuck["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "message": "0/3 nodes are available"}
    ]
    assert pod_state_line(stuck) == (
        "phase Pending, container main waiting (ContainerCreating): pulling slowly, "
        "not scheduled: 0/3 nodes are available"
    )
    assert pod_state_line(None) == "the pod was not found"


def test_the_preflight_error_is_one_line_with_the_remedy() -> None:
    error = PreflightError(f"the cluster cannot run the workload image {IMAGE}: x", "do y")
    assert str(error) == f"the cluster cannot run the workload image {IMAGE}: x -> do y"
    assert "\n" not in str(error)
