"""The API server's compile verdict of each selector: a server-side dry-run create of a
DeviceClass that carries it, so its own CEL environment and cost limits decide."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from cel_differential.compare import ServerVerdict


def _message(exc: ApiException) -> str:
    try:
        return json.loads(exc.body or "{}").get("message") or str(exc.reason)
    except (ValueError, TypeError):
        return str(exc.reason)


def server_verdicts(api_client: Any, expressions: Sequence[str]) -> list[ServerVerdict]:
    resource = k8s_client.ResourceV1Api(api_client)
    out = []
    for expression in expressions:
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"generateName": "cel-corpus-"},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        }
        try:
            resource.create_device_class(body, dry_run="All")
        except ApiException as exc:
            if exc.status not in (400, 422):
                raise
            out.append(ServerVerdict(False, _message(exc)))
        else:
            out.append(ServerVerdict(True))
    return out
