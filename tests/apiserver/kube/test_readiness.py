"""The driver's readiness on some nodes only (conformance.kube.readiness), against the real test
API server: a plugin pod's readiness is what its status says (no kubelet runs there, so the
tests write it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from helpers.dra_objects import pod

from conformance.kube.client import K8sClients
from conformance.kube.readiness import readiness_state
from conformance.model.profile import Profile, Readiness
from conformance.model.profile_parse import load_profile

ROOT = Path(__file__).resolve().parents[3]
LABELS = {"app": "plugin"}


def _profile(namespace: str) -> Profile:
    profile = load_profile(ROOT / "drivers" / "fake" / "profile.yaml")
    # No slices wanted: only the plugin pods decide here.
    return dataclasses.replace(profile, readiness=Readiness("plugin", namespace, 0))


def _plugin_pod(k8s: K8sClients, namespace: str, name: str, node: str, ready: bool) -> None:
    body = pod(name, node_name=node)
    body["metadata"]["labels"] = LABELS
    k8s.core.create_namespaced_pod(namespace, body)
    status = {"type": "Ready", "status": "True" if ready else "False"}
    k8s.core.patch_namespaced_pod_status(name, namespace, {"status": {"conditions": [status]}})


def test_readiness_on_some_nodes_asks_only_their_plugin_pods(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    template = {
        "metadata": {"labels": LABELS},
        "spec": {"containers": [{"name": "p", "image": "p"}]},
    }
    apiserver_k8s.apps.create_namespaced_daemon_set(
        api_namespace,
        {
            "metadata": {"name": "plugin"},
            "spec": {"selector": {"matchLabels": LABELS}, "template": template},
        },
    )
    _plugin_pod(apiserver_k8s, api_namespace, "plugin-a", "w1", ready=True)
    _plugin_pod(apiserver_k8s, api_namespace, "plugin-b", "w2", ready=False)
    profile = _profile(api_namespace)

    assert readiness_state(apiserver_k8s, profile, ["w1"]).ready
    state = readiness_state(apiserver_k8s, profile, ["w1", "w2", "w3"])
    assert not state.ready
    assert state.daemonset == "no ready plugin pod on w2, w3"
    # The whole DaemonSet is asked when no node is named (no controller ran: none scheduled).
    assert readiness_state(apiserver_k8s, profile).daemonset.startswith("rollout not observed")
