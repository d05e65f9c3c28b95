"""Which stuck pods are the cluster's or the harness's problem, not the driver's (pure: pods as
the API server serves them, built from the client's V1Pod models)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.pod_states import IMAGE, PULL_MESSAGE, container_state, container_status, pod
from kubernetes import client

from conformance.kube.harness_causes import (
    image_pull_failure,
    raise_if_pull_failure,
    sandbox_failure,
)
from conformance.model.outcome import HarnessError, typed_skip_properties


@pytest.mark.parametrize(
    "reason", ["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"]
)
def test_a_container_waiting_to_pull_its_image_is_a_pull_failure(reason: str) -> None:
    stuck = pod([container_status("main", container_state(reason, PULL_MESSAGE))])
    failure = image_pull_failure(stuck)
    assert failure is not None
    assert (failure.pod, failure.container, failure.image, failure.reason) == (
        "ns/user",
        "main",
        IMAGE,
        reason,
    )
    assert failure.message == PULL_MESSAGE
    assert str(failure) == (
        f"container main of pod ns/user cannot get image {IMAGE} ({reason}: {PULL_MESSAGE})"
    )


def test_the_image_named_is_the_failing_containers_own() -> None:
    stuck = pod(
        [
            container_status("main", container_state(running=client.V1ContainerStateRunning())),
            container_status("side", container_state("ImagePullBackOff", "Back-off pulling image")),
        ]
    )
    failure = image_pull_failure(stuck)
    assert failure is not None and (failure.container, failure.image) == ("side", "side:2")


def test_an_init_container_that_cannot_pull_counts() -> None:
    stuck = pod(init=[container_status("setup", container_state("ErrImagePull", "not found"))])
    failure = image_pull_failure(stuck)
    assert failure is not None and (failure.container, failure.image) == ("setup", "init:1")


@pytest.mark.parametrize(
    "state",
    [
        container_state("ContainerCreating"),
        container_state("CreateContainerError", "CDI device not found"),  # a driver's failure
        container_state("CrashLoopBackOff"),
        container_state(running=client.V1ContainerStateRunning()),
    ],
)
def test_other_container_states_are_not_pull_failures(state: client.V1ContainerState) -> None:
    assert image_pull_failure(pod([container_status("main", state)])) is None
    raise_if_pull_failure(pod([container_status("main", state)]))  # does not raise


def test_a_pod_without_statuses_or_no_pod_is_no_pull_failure() -> None:
    assert image_pull_failure(pod()) is None
    assert image_pull_failure(None) is None


def test_a_pull_failure_raises_a_harness_error_that_says_what_to_do() -> None:
    with pytest.raises(HarnessError) as err:
        raise_if_pull_failure(
            pod([container_status("main", container_state("ImagePullBackOff", PULL_MESSAGE))])
        )
    text = str(err.value)
    assert IMAGE in text and "not of the driver" in text
    assert "--dra-workload-image REF" in text
    # the report makes it an error of the requirement, never a failure
    assert typed_skip_properties(err.value) == [("dra_outcome", "error")]


def _event(reason: str, uid: str = "uid-1", kind: str = "Warning") -> dict[str, Any]:
    return {
        "type": kind,
        "reason": reason,
        "message": "Failed to create pod sandbox: rpc error: failed to setup network",
        "involvedObject": {"kind": "Pod", "name": "user", "uid": uid},
    }


def test_a_sandbox_failure_is_named_while_no_container_started() -> None:
    creating = pod([container_status("main", container_state("ContainerCreating"))])
    cause = sandbox_failure(
        creating, [_event("Scheduled", kind="Normal"), _event("FailedCreatePodSandBox")]
    )
    assert cause == (
        "the container runtime cannot create the sandbox of pod ns/user (FailedCreatePodSandBox: "
        "Failed to create pod sandbox: rpc error: failed to setup network)"
    )


def test_a_sandbox_failure_does_not_count_once_a_container_ran_or_for_another_pod() -> None:
    events = [_event("FailedCreatePodSandBox")]
    ran = pod([container_status("main", container_state(running=client.V1ContainerStateRunning()))])
    assert sandbox_failure(ran, events) is None
    creating = pod([container_status("main", container_state("ContainerCreating"))], uid="uid-2")
    assert sandbox_failure(creating, events) is None  # an earlier pod of the same name
    assert (
        sandbox_failure(pod([container_status("main", container_state("ContainerCreating"))]), [])
        is None
    )
