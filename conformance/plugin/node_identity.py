"""What the report names as the build the driver was tested on, per node the profile selects:
the kubelet's, container runtime's, OS image's and kernel's versions (conformance/kube/
node_info.py) and, on a kind cluster of the suite's, the node image with its Docker image ID
(conformance/cluster/node_images.py).

Read once by the controller; none of it decides a test, so a failure to read is recorded with
its reason and the run goes on.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.cluster.node_images import read_node_images
from conformance.kube.client import load_clients
from conformance.kube.node_info import read_node_info
from conformance.observe.redact import redact_text
from conformance.run.context import RunContext

# The controller's reading, kept for the facts it hands to xdist workers.
NODE_FACTS_KEY = pytest.StashKey[dict[str, Any]]()


def node_identity(context: RunContext) -> dict[str, Any]:
    """`{"nodes": {name: {kubelet_version, container_runtime_version, os_image,
    kernel_version[, node_image]}}, "nodes_error": why a part is missing ("" when none is)}`."""
    details: dict[str, dict[str, Any]] = {name: {} for name in context.nodes}
    problems = []
    try:
        k8s = load_clients(context.cluster.kubeconfig, context.cluster.context)
        for name, info in read_node_info(k8s, context.nodes).items():
            details[name].update(info)
    except Exception as exc:  # noqa: BLE001 - the report says why, the run goes on
        problems.append(f"could not read the nodes: {_why(exc)}")
    containers = {n: c for n, c in context.cluster.node_containers.items() if n in details}
    if context.cluster.provider == "kind" and containers:
        try:
            for name, image in read_node_images(containers).items():
                details[name]["node_image"] = image
        except Exception as exc:  # noqa: BLE001 - as above
            problems.append(f"could not read the node images: {_why(exc)}")
    return {"nodes": details, "nodes_error": redact_text("; ".join(problems))}


def _why(exc: Exception) -> str:
    """The exception's type and first line, or the API's status and reason."""
    status = getattr(exc, "status", None)
    detail = f"HTTP {status} {getattr(exc, 'reason', '')}".strip() if status else str(exc)
    return f"{type(exc).__name__}: {detail.splitlines()[0] if detail else ''}"
