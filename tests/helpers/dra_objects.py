"""Plain dicts of the objects the harness reads (nodes, namespaces, device classes, slices),
as the API server serves them; tests create them on the test API server or feed them to pure
functions."""

from __future__ import annotations

from typing import Any


def node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}


def namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": labels or {}},
    }


def device_class(name: str, *expressions: str, extended: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in expressions]}
    if extended:
        spec["extendedResourceName"] = extended
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }


def resource_slice(
    name: str,
    driver: str,
    node_name: str,
    devices: list[dict[str, Any]],
    generation: int = 1,
    pool: str | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": pool or node_name, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def slice_device(name: str, domain: str, **attributes: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    capacity: dict[str, Any] = {}
    for key, value in attributes.items():
        if key == "memory":
            capacity[f"{domain}/memory"] = {"value": value}
        elif isinstance(value, bool):
            attrs[f"{domain}/{key}"] = {"bool": value}
        elif isinstance(value, int):
            attrs[f"{domain}/{key}"] = {"int": value}
        else:
            attrs[f"{domain}/{key}"] = {"string": value}
    return {"name": name, "attributes": attrs, "capacity": capacity}


def pod(name: str, *, node_name: str | None = None, grace: int | None = None) -> dict[str, Any]:
    """A pod nothing will run (there is no kubelet): tests write its status themselves.
    `grace` 0 lets the API server delete it at once even when it is bound to a node."""
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "w"}]}
    if node_name:
        spec["nodeName"] = node_name
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def claim(name: str, device_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {
            "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": device_class}}]}
        },
    }


def allocated_status(driver: str, pool: str = "w1", device: str = "gpu-0") -> dict[str, Any]:
    """What the scheduler writes to an allocated, reserved claim."""
    return {
        "allocation": {
            "devices": {
                "results": [{"request": "r", "driver": driver, "pool": pool, "device": device}]
            }
        },
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
    }
