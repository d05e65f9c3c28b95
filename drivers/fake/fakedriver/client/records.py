"""Which run injected each fault of the fake driver's control ConfigMap.

The record lives in the ConfigMap's annotation ``dra-conformance.io/fault-runs`` (fault key
``<node>|<device>|<what>`` -> run id), written in the same update as the fault itself; and a
reverted fault leaves no trace in the control document (`prune`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

FAULT_RUNS_ANNOTATION = "dra-conformance.io/fault-runs"

Records = dict[str, str]  # fault key "<node>|<device>|<what>" -> run id


def fault_key(node: str, device: str | None, what: str) -> str:
    return f"{node}|{device or ''}|{what}"


def parse_fault_key(key: str) -> tuple[str, str | None, str]:
    node, device, what = key.split("|", 2)
    return node, device or None, what


def annotations_of(cm: Any) -> dict[str, str]:
    return dict(getattr(cm.metadata, "annotations", None) or {}) if cm is not None else {}


def records_of(cm: Any) -> Records:
    annotations = annotations_of(cm)
    try:
        records = json.loads(annotations.get(FAULT_RUNS_ANNOTATION) or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in records.items()} if isinstance(records, dict) else {}


def forget(node: str, device: str | None, what: str) -> Callable[[Records], None]:
    """Drop the record of an undone fault (`what` ending in ":" drops every such record)."""

    def change(records: Records) -> None:
        prefix = fault_key(node, device, what)
        for key in [
            k for k in records if k == prefix or (what.endswith(":") and k.startswith(prefix))
        ]:
            del records[key]

    return change


def prune(document: dict[str, Any]) -> None:
    """Drop empty containers so a reverted fault leaves no trace."""
    devices = document.get("devices")
    if isinstance(devices, dict):
        for name in [n for n, d in devices.items() if not d or d == {"taints": []}]:
            del devices[name]
        for d in devices.values():
            if d.get("taints") == []:
                del d["taints"]
    for key in ("devices", "misbehaviours"):
        if key in document and not document[key]:
            del document[key]
