"""The handle tests get: a kubeconfig for the official client, and per-test isolation helpers
for a server many tests share (unique names, cluster-scoped objects deleted at teardown)."""

from __future__ import annotations

import base64
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from conformance.kube.client import K8sClients, clients_for


@dataclass(frozen=True)
class ApiServer:
    url: str
    token: str
    ca_pem: bytes
    kubeconfig: Path
    timings: dict[str, float] = field(default_factory=dict)

    def api_client(self) -> Any:
        # A fresh client per caller: the library's global default configuration stays untouched.
        return k8s_config.new_client_from_config(config_file=str(self.kubeconfig))

    def clients(self) -> K8sClients:
        return clients_for(self.api_client())


def write_kubeconfig(path: Path, url: str, token: str, ca_pem: bytes) -> Path:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "test-apiserver",
        "clusters": [
            {
                "name": "test-apiserver",
                "cluster": {
                    "server": url,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": "test-admin", "user": {"token": token}}],
        "contexts": [
            {
                "name": "test-apiserver",
                "context": {"cluster": "test-apiserver", "user": "test-admin"},
            }
        ],
    }
    path.write_text(yaml.safe_dump(document))
    path.chmod(0o600)
    return path


def unique_name(prefix: str) -> str:
    """A DNS-1123 name no other test on the shared server uses."""
    slug = re.sub(r"[^a-z0-9-]+", "-", prefix.lower()).strip("-")[:40].strip("-")
    return f"{slug}-{secrets.token_hex(3)}"


class ClusterScoped:
    """Creates cluster-scoped objects (nodes, classes, rules) and deletes them at teardown,
    so tests sharing one API server never see each other's."""

    def __init__(self, api_client: Any) -> None:
        self.dynamic = DynamicClient(api_client)
        self.created: list[tuple[str, str, str]] = []

    def _resource(self, api_version: str, kind: str) -> Any:
        return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        resource = self._resource(body["apiVersion"], body["kind"])
        created = resource.create(body=body).to_dict()
        self.created.append((body["apiVersion"], body["kind"], created["metadata"]["name"]))
        return created

    def track(self, api_version: str, kind: str, name: str) -> None:
        """Delete at teardown an object created by the code under test."""
        self.created.append((api_version, kind, name))

    def delete_all(self) -> list[str]:
        failures = []
        for api_version, kind, name in reversed(self.created):
            try:
                self._resource(api_version, kind).delete(name=name)
            except ApiException as exc:
                if exc.status != 404:
                    failures.append(f"{kind}/{name}: HTTP {exc.status}")
        self.created.clear()
        return failures
