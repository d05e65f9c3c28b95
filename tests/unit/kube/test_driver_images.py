"""The driver's images as the kubelet reports them: digests from image IDs, one entry per
(container, image, image ID), and which pods are read."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from conformance.kube.driver_images import (
    container_images,
    image_digest,
    image_entries,
    label_selector,
    read_driver_images,
)

HEX = "0123456789abcdef" * 4
OTHER = "fedcba9876543210" * 4


@pytest.mark.parametrize(
    ("image_id", "digest"),
    [
        (f"docker.io/library/busybox@sha256:{HEX}", f"sha256:{HEX}"),
        (f"sha256:{HEX}", f"sha256:{HEX}"),  # an image loaded into a kind node
        (f"docker-pullable://busybox@sha256:{HEX.upper()}", f"sha256:{HEX}"),
        (f"docker://sha256:{HEX}", f"sha256:{HEX}"),
        ("", None),
        ("sha256:abc", None),  # not a digest
    ],
)
def test_the_digest_is_taken_from_the_image_id_whatever_its_form(
    image_id: str, digest: str | None
) -> None:
    assert image_digest(image_id) == digest


def _pod(
    name: str,
    containers: dict[str, str],
    statuses: dict[str, tuple[str, str]],
    init: dict[str, str] | None = None,
    init_statuses: dict[str, tuple[str, str]] | None = None,
    namespace: str = "drv",
) -> dict[str, Any]:
    def status(of: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
        return [{"name": n, "image": i, "imageID": d} for n, (i, d) in of.items()]

    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "containers": [{"name": n, "image": i} for n, i in containers.items()],
            "initContainers": [{"name": n, "image": i} for n, i in (init or {}).items()],
        },
        "status": {
            "containerStatuses": status(statuses),
            "initContainerStatuses": status(init_statuses or {}),
        },
    }


def test_every_container_and_init_container_is_named_with_what_the_kubelet_ran() -> None:
    init_id = f"docker.io/library/init@sha256:{OTHER}"
    pod = _pod(
        "plugin-a",
        {"plugin": "drv:1", "pending": "sidecar:2"},
        {"plugin": ("docker.io/library/drv:1", f"sha256:{HEX}")},
        init={"setup": "init:3"},
        init_statuses={"setup": ("docker.io/library/init:3", init_id)},
    )
    found = [(c.pod, c.container, c.image, c.image_id) for c in container_images(pod)]
    assert found == [
        ("drv/plugin-a", "setup", "docker.io/library/init:3", init_id),
        ("drv/plugin-a", "plugin", "docker.io/library/drv:1", f"sha256:{HEX}"),
        ("drv/plugin-a", "pending", "sidecar:2", ""),  # not started: the spec's image, no ID
    ]


def test_entries_are_one_per_container_image_and_id_with_their_pods() -> None:
    ran = {"plugin": ("drv:1", f"sha256:{HEX}")}
    pods = [
        _pod("plugin-b", {"plugin": "drv:1"}, ran),
        _pod("plugin-a", {"plugin": "drv:1"}, ran),
        # the same tag, another image: a node that pulled a newer push
        _pod("plugin-c", {"plugin": "drv:1"}, {"plugin": ("drv:1", f"sha256:{OTHER}")}),
        _pod("plugin-d", {"plugin": "drv:1"}, {}),
    ]
    assert image_entries(pods) == [
        {"container": "plugin", "image": "drv:1", "image_id": None, "digest": None,
         "pods": ["drv/plugin-d"]},
        {"container": "plugin", "image": "drv:1", "image_id": f"sha256:{HEX}",
         "digest": f"sha256:{HEX}", "pods": ["drv/plugin-a", "drv/plugin-b"]},
        {"container": "plugin", "image": "drv:1", "image_id": f"sha256:{OTHER}",
         "digest": f"sha256:{OTHER}", "pods": ["drv/plugin-c"]},
    ]  # fmt: skip


def test_a_label_selector_in_the_api_query_form() -> None:
    selector = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["x", "y"]},
            {"key": "old", "operator": "DoesNotExist"},
            {"key": "app", "operator": "Exists"},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
        ],
    }
    assert label_selector(selector) == "a=1,b=2,tier in (x,y),!old,app,env notin (dev)"
    assert label_selector({}) == ""


class _Core:
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.calls: list[tuple[str, str | None]] = []

    def list_namespaced_pod(
        self, namespace: str, label_selector: str | None = None, **_: Any
    ) -> Any:
        self.calls.append((namespace, label_selector))
        wanted = dict(p.split("=") for p in (label_selector or "").split(",") if p)
        items = [
            p
            for p in self.pods
            if p["metadata"]["namespace"] == namespace
            and wanted.items() <= (p["metadata"].get("labels") or {}).items()
        ]
        return SimpleNamespace(items=items)


class _Apps:
    def read_namespaced_daemon_set(self, name: str, namespace: str, **_: Any) -> Any:
        return {
            "metadata": {"name": name, "namespace": namespace, "uid": "ds-uid"},
            "spec": {"selector": {"matchLabels": {"app": "plugin"}}},
        }


def _clients(pods: list[dict[str, Any]]) -> Any:
    return SimpleNamespace(core=_Core(pods), apps=_Apps(), to_dict=lambda o: o)


def _labelled(pod: dict[str, Any], labels: dict[str, str], owner: str) -> dict[str, Any]:
    pod["metadata"]["labels"] = labels
    pod["metadata"]["ownerReferences"] = [{"uid": owner, "controller": True}]
    return pod


def test_the_driver_namespaces_and_the_daemonset_pods_are_read() -> None:
    ran = {"plugin": ("drv:1", f"sha256:{HEX}")}
    pods = [
        _pod("controller-0", {"ctl": "ctl:1"}, {"ctl": ("ctl:1", f"sha256:{OTHER}")}),
        _labelled(_pod("plugin-a", {"plugin": "drv:1"}, ran, namespace="kube-system"),
                  {"app": "plugin"}, "ds-uid"),
        # matches the selector, but another controller's: not the driver's
        _labelled(_pod("lookalike", {"plugin": "drv:1"}, ran, namespace="kube-system"),
                  {"app": "plugin"}, "other-uid"),
        _pod("coredns", {"coredns": "coredns:1"}, {}, namespace="kube-system"),
    ]  # fmt: skip
    k8s = _clients(pods)
    entries, why = read_driver_images(k8s, ["drv"], ("kube-system", "plugin"))
    assert why == ""
    assert [(e["container"], e["pods"]) for e in entries] == [
        ("ctl", ["drv/controller-0"]),
        ("plugin", ["kube-system/plugin-a"]),
    ]
    assert k8s.core.calls == [("drv", None), ("kube-system", "app=plugin")]


def test_a_daemonset_in_a_driver_namespace_is_not_listed_twice() -> None:
    k8s = _clients([])
    entries, why = read_driver_images(k8s, ["drv"], ("drv", "plugin"))
    assert entries == []
    assert why == "no pod of the driver found (namespace drv)"
    assert k8s.core.calls == [("drv", None)]


def test_api_errors_reach_the_caller() -> None:
    class Refusing:
        def list_namespaced_pod(self, *args: Any, **kwargs: Any) -> Any:
            raise PermissionError("pods is forbidden")

    k8s = SimpleNamespace(core=Refusing(), apps=_Apps(), to_dict=lambda o: o)
    with pytest.raises(PermissionError):
        read_driver_images(k8s, ["drv"], None)
