"""The run's preflight against the real test API server: a pod with the workload image that
cannot be pulled, or does not run in time, stops the run with one line; its namespace is the
run's and is deleted. Nothing runs pods there: a test writes the status a kubelet would."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from helpers.dra_objects import node
from helpers.pod_states import IMAGE, PULL_FAILED, PULL_MESSAGE, run_context
from kube_apiserver.server import ApiServer, ClusterScoped, unique_name

from conformance.kube import state
from conformance.kube.client import K8sClients
from conformance.model.naming import RUN_LABEL
from conformance.plugin.preflight import PreflightError, check_workload_image
from conformance.run.context import RunContext


@pytest.fixture
def preflight_node(cluster_scoped: ClusterScoped) -> str:
    name = unique_name("w")
    cluster_scoped.create(node(name, {"kubernetes.io/hostname": name}))
    return name


def _run_namespaces(k8s: K8sClients, context: RunContext) -> list[str]:
    listing = k8s.core.list_namespace(label_selector=f"{RUN_LABEL}={context.run_id}")
    return [n.metadata.name for n in listing.items if not n.metadata.deletion_timestamp]


def test_the_preflight_stops_the_run_in_one_line_when_the_image_cannot_be_pulled(
    kube_apiserver: ApiServer,
    apiserver_k8s: K8sClients,
    preflight_node: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    context = run_context(tmp_path, str(kube_apiserver.kubeconfig), (preflight_node,))
    read_pod, seen, tolerations = state.read_pod, [], []

    def read_then_fail_the_pull(k8s: K8sClients, namespace: str, name: str) -> Any:
        if not seen:  # the kubelet's part, once the preflight created its pod
            pod = k8s.core.read_namespaced_pod(name, namespace)
            tolerations.extend(pod.spec.tolerations or ())
            k8s.core.patch_namespaced_pod_status(name, namespace, {"status": PULL_FAILED})
        seen.append(namespace)
        return read_pod(k8s, namespace, name)

    monkeypatch.setattr(state, "read_pod", read_then_fail_the_pull)
    start = time.monotonic()
    with pytest.raises(PreflightError) as err:
        check_workload_image(context)
    assert time.monotonic() - start < 60  # the pull failure, not the 120 s podRunning timeout
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(
        f"the cluster cannot run the workload image {IMAGE}: the nodes cannot pull it "
        f"(ImagePullBackOff: {PULL_MESSAGE}) -> pass --dra-workload-image REF (any image with "
        "sh, env and sleep"
    ), text
    assert "dra-conformance driver install --name NAME" in text
    # a node another run cordoned or tainted still proves the image
    assert any(t.operator == "Exists" and not t.key for t in tolerations), tolerations
    # the pod ran in a namespace of the run, and nothing is left of it
    assert seen[0].startswith("dra-") and "preflight" in seen[0]
    assert _run_namespaces(apiserver_k8s, context) == []


def test_the_preflight_says_what_it_awaited_and_the_last_state_when_it_times_out(
    kube_apiserver: ApiServer,
    apiserver_k8s: K8sClients,
    preflight_node: str,
    tmp_path: Path,
) -> None:
    # No scheduler: the pod stays Pending with no container status, as on a cluster whose
    # nodes cannot take it.
    context = run_context(tmp_path, str(kube_apiserver.kubeconfig), (preflight_node,), scale=0.02)
    with pytest.raises(PreflightError) as err:
        check_workload_image(context)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(
        f"the cluster cannot run the workload image {IMAGE}: it was not running after 2 s on "
        f"node {preflight_node} (phase Pending) -> pass --dra-workload-image REF"
    ), text
    assert _run_namespaces(apiserver_k8s, context) == []


def test_no_preflight_without_a_node(tmp_path: Path) -> None:
    check_workload_image(run_context(tmp_path, "/nonexistent", nodes=()))  # reads no cluster
