"""A DaemonSet's pod template changed and put back (conformance.kube.rollout): the template edit
is pure; what the API server makes of the patch is checked against the real test API server
(no DaemonSet controller runs there, so no rollout does)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.kube import rollout
from conformance.kube.client import K8sClients

LABELS = {"app": "plugin"}
TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": LABELS, "annotations": {"keep": "1"}},
    "spec": {
        "containers": [
            {"name": "plugin", "image": "example.com/plugin:v1"},
            {"name": "sidecar", "image": "example.com/sidecar:v1"},
        ]
    },
}


def test_changed_template_sets_annotation_and_image_on_one_container() -> None:
    out = rollout.changed_template(
        TEMPLATE,
        annotations={"a": "2"},
        container="sidecar",
        image="example.com/sidecar:v2",
        pull_policy="Never",
    )
    assert out["metadata"]["annotations"] == {"keep": "1", "a": "2"}
    assert out["spec"]["containers"] == [
        {"name": "plugin", "image": "example.com/plugin:v1"},
        {"name": "sidecar", "image": "example.com/sidecar:v2", "imagePullPolicy": "Never"},
    ]
    assert TEMPLATE["spec"]["containers"][1]["image"] == "example.com/sidecar:v1"  # a copy
    first = rollout.changed_template(TEMPLATE, image="example.com/plugin:v2")
    assert first["spec"]["containers"][0]["image"] == "example.com/plugin:v2"
    with pytest.raises(ValueError, match="no container 'nope'"):
        rollout.changed_template(TEMPLATE, container="nope", image="x")


def test_node_rollout_unavailable_time() -> None:
    node = rollout.NodeRollout("old")
    assert node.unavailable_s is None and not node.in_transition
    node.stopped_at = 10.0
    assert node.in_transition and node.unavailable_s is None
    node.ready_at = 13.5
    assert not node.in_transition and node.unavailable_s == 3.5


def test_set_template_replaces_the_whole_template(
    apiserver_k8s: K8sClients, api_namespace: str
) -> None:
    body = {
        "metadata": {"name": "plugin"},
        "spec": {"selector": {"matchLabels": LABELS}, "template": TEMPLATE},
    }
    created = apiserver_k8s.apps.create_namespaced_daemon_set(api_namespace, body)
    daemonset = apiserver_k8s.to_dict(created)
    assert rollout.update_strategy(daemonset) == "RollingUpdate"  # the API's default
    original = daemonset["spec"]["template"]
    changed = rollout.changed_template(original, annotations={"update": "1"}, image="x:2")
    changed["metadata"]["annotations"].pop("keep")
    generation = rollout.set_template(apiserver_k8s, api_namespace, "plugin", changed)
    assert generation == daemonset["metadata"]["generation"] + 1
    now = rollout.read_daemonset(apiserver_k8s, api_namespace, "plugin")["spec"]["template"]
    assert now["metadata"]["annotations"] == {"update": "1"}  # replaced, not merged
    assert now["spec"]["containers"][0]["image"] == "x:2"
    assert rollout.set_template(apiserver_k8s, api_namespace, "plugin", original) == generation + 1
    restored = rollout.read_daemonset(apiserver_k8s, api_namespace, "plugin")["spec"]["template"]
    assert restored == original
