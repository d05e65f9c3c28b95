"""Which stuck pods are the cluster's or the harness's problem, not the driver's (pure: pods as
the API server serves them, built from the client's V1Pod models)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.pod_states import IMAGE, PULL_MESSAGE, container_state, container_status, pod
from kubernetes import client
from kubernetes.client.exceptions import ApiException

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
    assert cause is not None and not cause.by_driver
    assert str(cause) == (
        "the container runtime cannot create the sandbox of pod ns/user (FailedCreatePodSandBox: "
        "Failed to create pod sandbox: rpc error: failed to setup network)"
    )


# The kubelet's event for a sandbox that containerd's NRI hook refused (a dranet plugin
# whose interface is already in another pod), and one of the CNI (the cluster's).
NRI_REFUSED = (
    "Failed to create pod sandbox: rpc error: code = Unknown desc = NRI RunPodSandbox failed: "
    "failed to get link for interface macvlan0: Link not found"
)
CNI_FAILED = (
    "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for "
    'sandbox "0c2f": plugin type="ptp" failed (add): failed to allocate for range 0'
)


@pytest.mark.parametrize(
    ("message", "by_driver"),
    [
        (NRI_REFUSED, True),
        (
            "Failed to create pod sandbox: rpc error: code = Unknown desc = NRI RunPodSandbox "
            "failed: using host network can not claim host devices",
            True,
        ),
        (CNI_FAILED, False),
        (
            "Failed to create pod sandbox: rpc error: code = DeadlineExceeded desc = context "
            "deadline exceeded",
            False,
        ),
    ],
)
def test_a_sandbox_an_nri_plugin_refused_is_the_drivers_failure(
    message: str, by_driver: bool
) -> None:
    creating = pod([container_status("main", container_state("ContainerCreating"))])
    event = {**_event("FailedCreatePodSandBox"), "message": message}
    cause = sandbox_failure(creating, [_event("FailedCreatePodSandBox"), event])
    assert cause is not None and cause.by_driver is by_driver
    assert cause.message == message  # the newest event's message is the reason
    assert ("driver's failure" in str(cause)) is by_driver, str(cause)
    assert message in str(cause)


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


RBAC_DENIAL = (
    '{"kind":"Status","status":"Failure","message":"pods \\"pod\\" is forbidden: User '
    '\\"system:serviceaccount:dra-conformance:dra-conformance\\" cannot create resource '
    '\\"pods/exec\\" in API group \\"\\" in the namespace \\"t-1\\"","reason":"Forbidden",'
    '"code":403}'
)


def _api_exception(status: int, reason: str, body: str = "") -> ApiException:
    exc = ApiException(status=status, reason=reason)
    exc.body = body
    return exc


@pytest.mark.parametrize(
    "exc",
    [
        _api_exception(403, "Forbidden", RBAC_DENIAL),
        # an exec refused at its websocket handshake: the client's status is 0
        _api_exception(0, f"Handshake status 403 Forbidden -+-+- {{}} -+-+- {RBAC_DENIAL}"),
        _api_exception(401, "Unauthorized", '{"message":"Unauthorized"}'),
    ],
)
def test_a_request_the_runs_account_may_not_make_is_the_harnesss_error(exc: ApiException) -> None:
    assert typed_skip_properties(exc) == [("dra_outcome", "error")]


@pytest.mark.parametrize(
    "body",
    [
        '{"message":"admission webhook \\"gpu.example.com\\" denied the request: no"}',
        '{"message":"pods \\"p\\" is forbidden: exceeded quota: q, requested: pods=1"}',
    ],
)
def test_an_admission_or_quota_refusal_stays_the_tests(body: str) -> None:
    assert typed_skip_properties(_api_exception(403, "Forbidden", body)) == []
    assert typed_skip_properties(_api_exception(404, "Not Found", RBAC_DENIAL[:20])) == []
