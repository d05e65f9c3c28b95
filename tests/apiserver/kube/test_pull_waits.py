"""A pod whose image cannot be pulled, against the real test API server: the waits for it end at
once as a HarnessError (an error of the requirement, not a failure of the driver), and the
run's preflight stops the run with one line. Nothing runs pods there: each test writes the
status a kubelet would write."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.dra_objects import pod
from helpers.pod_states import IMAGE, PULL_FAILED, run_context

from conformance.kube import state, waits
from conformance.kube.builders import Builders
from conformance.kube.client import K8sClients
from conformance.model.outcome import HarnessError
from conformance.scenario_api.deployments import wait_ready_pods
from conformance.scenario_api.workloads import Workloads


def _pod_with_image(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    body = pod(name)
    body["spec"]["containers"][0]["image"] = IMAGE
    body["metadata"]["labels"] = labels or {}
    return body


def _pull_fails(k8s: K8sClients, namespace: str, name: str) -> None:
    k8s.core.create_namespaced_pod(namespace, _pod_with_image(name))
    k8s.core.patch_namespaced_pod_status(name, namespace, {"status": PULL_FAILED})


def _fast(wait: Callable[[], Any]) -> HarnessError:
    """The wait raises a HarnessError long before its 60 s timeout."""
    start = time.monotonic()
    with pytest.raises(HarnessError) as err:
        wait()
    assert time.monotonic() - start < 20
    assert IMAGE in str(err.value) and "ImagePullBackOff" in str(err.value)
    assert "--dra-workload-image REF" in str(err.value)
    return err.value


def test_wait_running_ends_at_once_as_a_harness_error(
    apiserver_k8s: K8sClients, api_namespace: str, tmp_path: Path
) -> None:
    _pull_fails(apiserver_k8s, api_namespace, "user")
    workload = Workloads(apiserver_k8s, Builders("r"), api_namespace, run_context(tmp_path))
    _fast(lambda: workload.wait_running("user", timeout=60))


def test_the_kube_pod_waits_end_at_once_as_a_harness_error(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    _pull_fails(apiserver_k8s, api_namespace, "user")
    _fast(lambda: waits.wait_for_pod_running(apiserver_k8s, api_namespace, "user", timeout=60))
    _fast(
        lambda: waits.wait_for_pod_phase(
            apiserver_k8s, api_namespace, "user", "Succeeded", timeout=60
        )
    )
    # A pod that is still pulling is Pending: that wait is over, not broken.
    pending = waits.wait_for_pod_phase(apiserver_k8s, api_namespace, "user", "Pending", timeout=5)
    assert state.pod_phase(pending) == "Pending"


def test_a_deployments_pods_that_cannot_pull_end_the_wait_as_a_harness_error(
    apiserver_k8s: K8sClients, api_namespace: str, tmp_path: Path
) -> None:
    labels = {"app.kubernetes.io/name": "app"}
    apiserver_k8s.core.create_namespaced_pod(api_namespace, _pod_with_image("app-1", labels))
    apiserver_k8s.core.patch_namespaced_pod_status("app-1", api_namespace, {"status": PULL_FAILED})
    workload = Workloads(apiserver_k8s, Builders("r"), api_namespace, run_context(tmp_path))
    _fast(lambda: wait_ready_pods(workload, "app", 1, timeout=60))


def _pod_failing_its_sandbox(k8s: K8sClients, namespace: str, message: str) -> None:
    """Pod `user`, still creating, with a FailedCreatePodSandBox warning carrying `message`."""
    created = k8s.core.create_namespaced_pod(namespace, _pod_with_image("user"))
    creating = {
        **PULL_FAILED,
        "containerStatuses": [
            {
                **PULL_FAILED["containerStatuses"][0],
                "state": {"waiting": {"reason": "ContainerCreating"}},
            }
        ],
    }
    k8s.core.patch_namespaced_pod_status("user", namespace, {"status": creating})
    k8s.core.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": "user.sandbox"},
            "type": "Warning",
            "reason": "FailedCreatePodSandBox",
            "message": message,
            "involvedObject": {
                "kind": "Pod",
                "namespace": namespace,
                "name": "user",
                "uid": created.metadata.uid,
            },
        },
    )


def test_a_timeout_on_sandbox_failures_is_a_harness_error(
    apiserver_k8s: K8sClients, api_namespace: str, tmp_path: Path
) -> None:
    _pod_failing_its_sandbox(
        apiserver_k8s,
        api_namespace,
        "Failed to create pod sandbox: failed to setup network for sandbox",
    )
    workload = Workloads(apiserver_k8s, Builders("r"), api_namespace, run_context(tmp_path))
    with pytest.raises(HarnessError) as err:
        workload.wait_running("user", timeout=1)
    text = str(err.value)
    assert text.startswith(
        f"the container runtime cannot create the sandbox of pod {api_namespace}/user "
        "(FailedCreatePodSandBox: Failed to create pod sandbox: failed to setup network for "
        "sandbox): a problem of the cluster or the harness, not of the driver"
    ), text
    assert isinstance(err.value.__cause__, waits.WaitTimeout)


def test_a_timeout_on_a_sandbox_the_drivers_nri_plugin_refused_is_a_failure(
    apiserver_k8s: K8sClients, api_namespace: str, tmp_path: Path
) -> None:
    message = (
        "Failed to create pod sandbox: rpc error: code = Unknown desc = NRI RunPodSandbox "
        "failed: failed to get link for interface macvlan0: Link not found"
    )
    _pod_failing_its_sandbox(apiserver_k8s, api_namespace, message)
    workload = Workloads(apiserver_k8s, Builders("r"), api_namespace, run_context(tmp_path))
    with pytest.raises(AssertionError) as err:
        workload.wait_running("user", timeout=1)
    assert not isinstance(err.value, HarnessError)
    assert str(err.value).startswith(
        f"an NRI plugin refused the sandbox of pod {api_namespace}/user, which is the "
        f"driver's failure (FailedCreatePodSandBox: {message})"
    ), str(err.value)
    assert isinstance(err.value.__cause__, waits.WaitTimeout)
