"""The `in-cluster` provider: a run inside a pod, as the pod's service account.

The client library resolves the service account (`load_incluster_config`: API server address
from the pod's environment, its CA and token files). Every consumer of a cluster in the harness
takes a kubeconfig path (the Python clients, helm, profile commands through DRA_KUBECONFIG), so
the resolved account is written as one: a kubeconfig whose user reads the token file, so a
rotated token is picked up by whoever loads it next.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config import incluster_config

from conformance.errors import ClusterError

CONTEXT = "in-cluster"
KUBECONFIG_ENV = "DRA_IN_CLUSTER_KUBECONFIG"  # where to write it (default: a temp directory)


def _service_account() -> k8s.Configuration:
    configuration = k8s.Configuration()
    try:
        # Into a fresh Configuration: the library's global default stays untouched.
        k8s_config.load_incluster_config(client_configuration=configuration)
    except k8s_config.ConfigException as exc:
        raise ClusterError(
            f"--cluster in-cluster: no service account to run as ({exc})",
            "run it in a pod with a service account token mounted (deploy/rbac/), or use "
            "--cluster existing --kubeconfig PATH from outside the cluster",
        ) from None
    return configuration


def kubeconfig_document(configuration: k8s.Configuration) -> dict:
    """A kubeconfig for the API server and CA of `configuration`, authenticated by the pod's
    service account token file."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT,
                "cluster": {
                    "server": configuration.host,
                    "certificate-authority": configuration.ssl_ca_cert,
                },
            }
        ],
        "users": [
            {"name": CONTEXT, "user": {"tokenFile": incluster_config.SERVICE_TOKEN_FILENAME}}
        ],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT}}],
        "current-context": CONTEXT,
    }


def write_kubeconfig() -> Path:
    """The pod's service account as a kubeconfig file; its path."""
    document = kubeconfig_document(_service_account())
    default = Path(tempfile.gettempdir()) / "dra-conformance-in-cluster" / "kubeconfig"
    path = Path(os.environ.get(KUBECONFIG_ENV) or default)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    path.chmod(0o600)
    return path
