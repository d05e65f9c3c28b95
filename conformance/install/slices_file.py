"""A dump of a cluster's DRA objects for `profile check --slices`: the output of `kubectl get
resourceslices -o yaml` (a List), or a stream of ResourceSlice documents; DeviceClasses in it
(`kubectl get resourceslices,deviceclasses -o yaml`) are used too."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from conformance.errors import ConformanceError

REMEDY = "give the output of: kubectl get resourceslices -o yaml (optionally with ,deviceclasses)"


def _objects(document: Any) -> list[Any]:
    if isinstance(document, Mapping) and isinstance(document.get("items"), list):
        return list(document["items"])  # a List, whatever its kind says
    return [document]


def _v1_device(device: Mapping) -> dict:
    """resource.k8s.io/v1beta1 wraps a device's fields in `basic`; later versions do not."""
    basic = device.get("basic")
    if not isinstance(basic, Mapping):
        return dict(device)
    return {"name": device.get("name"), **basic}


def read_slices_file(path: str | Path) -> tuple[list[dict], dict[str, dict]]:
    """(ResourceSlices, DeviceClasses by name) in the file; ConformanceError (exit 2) when it
    cannot be read or holds no ResourceSlice."""
    path = Path(path)
    if not path.is_file():
        raise ConformanceError(f"--slices {path}: no such file", REMEDY)
    try:
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConformanceError(
            f"--slices {path} is not YAML: {exc}".splitlines()[0], REMEDY
        ) from None
    slices: list[dict] = []
    classes: dict[str, dict] = {}
    for obj in (o for d in documents for o in _objects(d)):
        if not isinstance(obj, Mapping):
            continue
        if obj.get("kind") == "DeviceClass":
            classes[(obj.get("metadata") or {}).get("name", "")] = dict(obj)
        elif obj.get("kind") == "ResourceSlice":
            spec = obj.get("spec")
            if not isinstance(spec, Mapping) or not isinstance(spec.get("pool"), Mapping):
                name = (obj.get("metadata") or {}).get("name", "?")
                raise ConformanceError(
                    f"--slices {path}: ResourceSlice {name} has no spec.pool", REMEDY
                )
            devices = [_v1_device(d) for d in spec.get("devices") or () if isinstance(d, Mapping)]
            slices.append({**obj, "spec": {**spec, "devices": devices}})
    if not slices:
        raise ConformanceError(f"--slices {path} holds no ResourceSlice", REMEDY)
    return slices, classes
