"""Kubernetes API clients, built once per process from a kubeconfig and context.

Uses `new_client_from_config`, not `load_kube_config`: the latter mutates the client library's
global default configuration, which would leak between clusters in the project's own tests.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from conformance.errors import ClusterError
from conformance.kube.field_manager import identify


@dataclass(frozen=True)
class K8sClients:
    """The typed APIs the harness uses, sharing one connection pool."""

    api_client: Any
    core: Any  # CoreV1Api
    apps: Any  # AppsV1Api
    resource: Any  # ResourceV1Api (resource.k8s.io/v1)
    scheduling: Any  # SchedulingV1Api
    policy: Any  # PolicyV1Api
    version: Any  # VersionApi

    def to_dict(self, obj: Any) -> Any:
        """An API object (pydantic model) as the camelCase dict the server sent."""
        return self.api_client.sanitize_for_serialization(obj)

    def get_raw(self, path: str, accept: str = "application/json", timeout: float = 30) -> str:
        """GET a raw path such as /metrics or /apis/resource.k8s.io (no model)."""
        return get_raw(self.api_client, path, accept, timeout)

    def get_json(self, path: str) -> Any:
        return json.loads(self.get_raw(path))


def clients_for(api_client: Any) -> K8sClients:
    """The typed APIs over `api_client`, which from now on writes as the harness's field
    manager (conformance.kube.field_manager)."""
    identify(api_client)
    return K8sClients(
        api_client=api_client,
        core=k8s.CoreV1Api(api_client),
        apps=k8s.AppsV1Api(api_client),
        resource=k8s.ResourceV1Api(api_client),
        scheduling=k8s.SchedulingV1Api(api_client),
        policy=k8s.PolicyV1Api(api_client),
        version=k8s.VersionApi(api_client),
    )


@functools.lru_cache(maxsize=8)
def load_clients(kubeconfig: str | None, context: str | None = None) -> K8sClients:
    """Clients for `kubeconfig` (None: $KUBECONFIG or ~/.kube/config) and `context`."""
    try:
        api_client = k8s_config.new_client_from_config(config_file=kubeconfig, context=context)
    except (k8s_config.ConfigException, OSError) as exc:
        where = kubeconfig or "$KUBECONFIG / ~/.kube/config"
        raise ClusterError(
            f"cannot load kubeconfig {where}"
            + (f" (context {context})" if context else "")
            + f": {exc}",
            "pass --kubeconfig PATH (and --context NAME) for an existing cluster",
        ) from exc
    return clients_for(api_client)


def get_raw(
    api_client: Any, path: str, accept: str = "application/json", timeout: float = 30
) -> str:
    """The 37.x client's call_api takes (method, url) and returns the raw response."""
    method, url, headers, body, post = api_client.param_serialize(
        method="GET",
        resource_path=path,
        header_params={"Accept": accept},
        auth_settings=["BearerToken"],
    )
    response = api_client.call_api(
        method, url, header_params=headers, body=body, post_params=post, _request_timeout=timeout
    )
    response.read()
    if response.status >= 400:
        raw = response.data
        raise k8s.exceptions.ApiException(
            status=response.status,
            reason=response.reason,
            body=raw.decode(errors="replace") if isinstance(raw, bytes) else raw,
        )
    data = response.data
    return data.decode() if isinstance(data, bytes) else str(data)
