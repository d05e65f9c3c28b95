"""The driver's container images as the kubelet ran them: what a report names as the driver it
certified.

A tag says what was asked for; the image ID the kubelet reports in a container's status
(`registry.example/x@sha256:...`, or `sha256:...` for an image loaded into a node) says
what ran. Every container and init container of the driver's pods gives one entry; pods running
the same container from the same image are one entry that lists them.

The parsing is pure (pods as the API serves them, camelCase dicts); `read_driver_images` is the
one call to the API server.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.kube.client import K8sClients

# The content digest inside an image ID, whatever the runtime prefixes it with
# (`<runtime>-pullable://x@sha256:...`, `<runtime>://sha256:...`).
_DIGEST = re.compile(r"(?<![0-9a-z])(sha256|sha384|sha512):([0-9a-fA-F]{64,128})(?![0-9a-zA-Z])")
API_TIMEOUT_S = 30


def image_digest(image_id: str) -> str | None:
    """`sha256:<hex>` (lower case) from an image ID as the kubelet reports it, or None."""
    found = _DIGEST.findall(image_id or "")
    if not found:
        return None
    algorithm, hexdigest = found[-1]
    return f"{algorithm}:{hexdigest.lower()}"


@dataclass(frozen=True)
class ContainerImage:
    """One container of one pod and the image it runs."""

    pod: str  # namespace/name
    container: str
    image: str  # the status's image, else the spec's (a container not started yet)
    image_id: str  # the status's imageID; "" when the kubelet has not pulled or started it


def container_images(pod: Mapping[str, Any]) -> list[ContainerImage]:
    """Every init container and container of `pod`, with the image it runs (or will run)."""
    meta, spec, status = (pod.get(k) or {} for k in ("metadata", "spec", "status"))
    name = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    found = []
    for spec_key, status_key in (
        ("initContainers", "initContainerStatuses"),
        ("containers", "containerStatuses"),
    ):
        statuses = {s.get("name"): s for s in status.get(status_key) or ()}
        for container in spec.get(spec_key) or ():
            seen = statuses.get(container.get("name")) or {}
            found.append(
                ContainerImage(
                    pod=name,
                    container=str(container.get("name", "")),
                    image=str(seen.get("image") or container.get("image") or ""),
                    image_id=str(seen.get("imageID") or ""),
                )
            )
    return found


def image_entries(pods: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (container, image, image ID) over `pods`, with the pods that run it:
    `{"container", "image", "image_id", "digest", "pods": [namespace/name, ...]}`; `image_id`
    and `digest` are None for a container the kubelet has not started."""
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for pod in pods:
        for c in container_images(pod):
            grouped.setdefault((c.container, c.image, c.image_id), []).append(c.pod)
    return [
        {
            "container": container,
            "image": image,
            "image_id": image_id or None,
            "digest": image_digest(image_id),
            "pods": sorted(set(pod_names)),
        }
        for (container, image, image_id), pod_names in sorted(grouped.items())
    ]


def label_selector(selector: Mapping[str, Any]) -> str:
    """A LabelSelector (matchLabels and matchExpressions) in the API's query form."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key"), expression.get("operator")
        values = ",".join(expression.get("values") or ())
        parts.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": f"{key}",
                "DoesNotExist": f"!{key}",
            }.get(str(operator), "")
        )
    return ",".join(p for p in parts if p)


def read_driver_images(
    k8s: K8sClients, namespaces: Iterable[str], daemonset: tuple[str, str] | None
) -> tuple[list[dict[str, Any]], str]:
    """The images of every pod in the driver's own `namespaces` and of the readiness
    `daemonset` ((namespace, name), its label selector), and why there are none ("" when there
    are some). API errors are raised: the caller decides what a failure means."""
    namespaces = sorted(set(namespaces))
    pods: dict[tuple[str, str], dict[str, Any]] = {}

    def add(listing: Any, owner_uid: str | None = None) -> None:
        for item in listing.items:
            pod = k8s.to_dict(item)
            meta = pod.get("metadata") or {}
            owners = meta.get("ownerReferences") or ()
            if owner_uid is None or any(o.get("uid") == owner_uid for o in owners):
                pods[(meta.get("namespace", ""), meta.get("name", ""))] = pod

    for namespace in namespaces:
        add(k8s.core.list_namespaced_pod(namespace, _request_timeout=API_TIMEOUT_S))
    where = [f"namespace {n}" for n in namespaces]
    if daemonset is not None and daemonset[0] not in namespaces:
        namespace, name = daemonset
        ds = k8s.to_dict(
            k8s.apps.read_namespaced_daemon_set(name, namespace, _request_timeout=API_TIMEOUT_S)
        )
        selector = label_selector((ds.get("spec") or {}).get("selector") or {})
        if selector:  # the API requires one; an empty one would list the whole namespace
            add(
                k8s.core.list_namespaced_pod(
                    namespace, label_selector=selector, _request_timeout=API_TIMEOUT_S
                ),
                owner_uid=(ds.get("metadata") or {}).get("uid"),  # not a look-alike's pods
            )
        where.append(f"DaemonSet {namespace}/{name}")
    entries = image_entries(pods[key] for key in sorted(pods))
    if entries:
        return entries, ""
    return [], f"no pod of the driver found ({', '.join(where) or 'nothing to look in'})"
