"""Field ownership the harness took on someone else's object, given back.

A patch (an "Update" in `metadata.managedFields`) takes the fields it changes from their
owners, also when a later patch puts the old values back: after the driver-update tests the
harness would still own the plugin container's image, and the vendor's next server-side apply
with a new image (Helm 4, `kubectl apply --server-side`, Argo) fails with a conflict. So once
the object's content is restored, `give_back` removes the harness's Update entries and returns
to each original manager the fields it owned before (the union of what it owns now and then),
as if the harness had never written. The harness's own Apply entry (a driver it installed from
manifests) is an owner like any other and is kept.

Only `metadata.managedFields` changes, so the request itself owns nothing; it is guarded by
`metadata.resourceVersion` (a JSON-patch test) and retried when the object moved meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tenacity
from kubernetes.client.exceptions import ApiException

from conformance.kube.field_manager import FIELD_MANAGER

# The apiserver refuses the patch when resourceVersion moved (the JSON-patch test fails: 422;
# an update raced it: 409).
_RACED = (409, 422)
GIVE_BACK_ATTEMPTS = 5


def _key(entry: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (
        str(entry.get("manager") or ""),
        str(entry.get("operation") or ""),
        str(entry.get("subresource") or ""),
        str(entry.get("apiVersion") or ""),
    )


def is_ours(entry: Mapping[str, Any], manager: str = FIELD_MANAGER) -> bool:
    """An entry the harness's patches made (not its server-side apply of an install)."""
    return entry.get("manager") == manager and entry.get("operation") == "Update"


def union_fields(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Two FieldsV1 sets (nested {"f:name": {...}, "k:{...}": {...}, ".": {}}) as one."""
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in a.items()}
    for key, value in b.items():
        mine = out.get(key)
        if isinstance(mine, Mapping) and isinstance(value, Mapping):
            out[key] = union_fields(mine, value)
        elif key not in out:
            out[key] = value
    return out


def given_back(
    current: Sequence[Mapping[str, Any]],
    original: Sequence[Mapping[str, Any]],
    manager: str = FIELD_MANAGER,
) -> list[dict[str, Any]]:
    """`current` managedFields without `manager`'s Update entries, every other entry owning
    what it owned in `original` too, and the entries `original` had that are gone re-added."""
    before = {_key(e): e for e in original if not is_ours(e, manager)}
    out: list[dict[str, Any]] = []
    for entry in current:
        if is_ours(entry, manager):
            continue
        earlier = before.pop(_key(entry), None)
        if earlier is not None:
            fields = union_fields(entry.get("fieldsV1") or {}, earlier.get("fieldsV1") or {})
            entry = {**entry, "fieldsV1": fields}
        out.append(dict(entry))
    out.extend(dict(e) for e in before.values())
    return out


def give_back(
    read: Callable[[], Mapping[str, Any]],
    patch: Callable[[list[dict[str, Any]]], Any],
    original: Sequence[Mapping[str, Any]],
) -> bool:
    """Write `given_back(...)` as the object's managedFields; False if nothing was ours.

    `read` returns the object (camelCase dict), `patch` sends a JSON patch to it."""
    for attempt in tenacity.Retrying(
        retry=tenacity.retry_if_exception(
            lambda e: isinstance(e, ApiException) and e.status in _RACED
        ),
        stop=tenacity.stop_after_attempt(GIVE_BACK_ATTEMPTS),
        wait=tenacity.wait_fixed(0.2),
        reraise=True,
    ):
        with attempt:
            meta = read().get("metadata") or {}
            current = meta.get("managedFields") or []
            if not any(is_ours(e) for e in current):
                return False
            # An empty list would leave managedFields as they are; [{}] clears them.
            fields = given_back(current, original) or [{}]
            patch(
                [
                    {
                        "op": "test",
                        "path": "/metadata/resourceVersion",
                        "value": meta["resourceVersion"],
                    },
                    {"op": "replace", "path": "/metadata/managedFields", "value": fields},
                ]
            )
    return True
