"""The wait for the scheduler to see a cordon, against the real test API server. There is no
scheduler here: the test writes what it would (a probe placed from a stale cache, then a probe
refused because the node is unschedulable) and checks that the harness retries with a new probe
and leaves none behind."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from helpers.dra_objects import pod
from tenacity import Retrying, stop_after_delay, wait_fixed

from conformance.kube import state
from conformance.kube.client import K8sClients
from conformance.kube.cordon_seen import UNSCHEDULABLE_NODE, await_cordon_seen
from conformance.kube.waits import WaitTimeout


def _prober(ns: str) -> Callable[[str], dict[str, Any]]:
    def probe(name: str) -> dict[str, Any]:
        body = pod(name, grace=0)
        body["metadata"]["namespace"] = ns
        body["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "w1"}
        return body

    return probe


def _schedule(k8s: K8sClients, ns: str, name: str, status: str, message: str = "") -> None:
    """The scheduler's part: the PodScheduled condition of one probe."""
    cond = {"type": "PodScheduled", "status": status, "message": message}
    if status == "False":
        cond["reason"] = "Unschedulable"
    k8s.core.patch_namespaced_pod_status(name, ns, {"status": {"conditions": [cond]}})


def _await_created(k8s: K8sClients, ns: str, name: str) -> None:
    for attempt in Retrying(stop=stop_after_delay(20), wait=wait_fixed(0.1), reraise=True):
        with attempt:
            assert state.read_pod(k8s, ns, name) is not None, f"probe {name} never created"


def test_a_probe_placed_from_a_stale_cache_is_replaced_until_one_is_refused(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    k8s, ns = apiserver_k8s, api_namespace
    result: dict[str, Any] = {}

    def wait() -> None:
        try:
            result["placed"] = await_cordon_seen(
                k8s, "w1", namespace=ns, probe=_prober(ns), timeout=30
            )
        except BaseException as exc:  # shown by the assertion below
            result["error"] = exc

    waiter = threading.Thread(target=wait)
    waiter.start()
    _await_created(k8s, ns, "cordon-probe-1")
    _schedule(k8s, ns, "cordon-probe-1", "True")  # the stale cache placed it
    _await_created(k8s, ns, "cordon-probe-2")
    assert state.read_pod(k8s, ns, "cordon-probe-1") is None, "the placed probe was left"
    # Refused for another reason (a selector mismatch) does not prove the cordon was seen.
    _schedule(
        k8s,
        ns,
        "cordon-probe-2",
        "False",
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
    )
    waiter.join(timeout=2)
    assert waiter.is_alive(), "returned before the probe was refused because of the cordon"
    _schedule(
        k8s,
        ns,
        "cordon-probe-2",
        "False",
        f"0/3 nodes are available: 1 {UNSCHEDULABLE_NODE}, 2 node(s) didn't match ...",
    )
    waiter.join(timeout=20)
    assert not waiter.is_alive()
    assert result.get("placed") == 1, result
    assert state.read_pod(k8s, ns, "cordon-probe-2") is None, "the refused probe was left"


def test_a_cordon_never_seen_times_out_naming_the_node_and_the_last_probe(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    with pytest.raises(
        WaitTimeout, match=r"(?s)the scheduler to see node w1 cordoned.*cordon-probe-1"
    ):
        await_cordon_seen(
            apiserver_k8s, "w1", namespace=api_namespace, probe=_prober(api_namespace), timeout=2
        )
    assert state.read_pod(apiserver_k8s, api_namespace, "cordon-probe-1") is None
