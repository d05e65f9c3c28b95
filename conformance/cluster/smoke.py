"""Smoke check that the cluster is real: pods run on every worker, reach the API server through
the `kubernetes` service IP, and resource.k8s.io/v1 serves every DRA resource."""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field

from kubernetes import client, config

from conformance.cluster.kindconfig import CONTROL_PLANE_LABEL
from conformance.kube.field_manager import FIELD_MANAGER, identify
from conformance.kube.waits import WaitTimeout, wait_until

DRA_RESOURCES = (
    "deviceclasses",
    "resourceclaims",
    "resourceclaimtemplates",
    "resourceslices",
    "devicetaintrules",
)


@dataclass
class SmokeResult:
    workers: list[str] = field(default_factory=list)
    pods_ran_on: dict[str, str] = field(default_factory=dict)  # node -> pod phase
    api_via_service: dict[str, bool] = field(default_factory=dict)  # node -> reached
    served_dra_resources: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _api_client(kubeconfig: str) -> client.ApiClient:
    return identify(config.new_client_from_config(config_file=kubeconfig))


def served_resources(api: client.ApiClient) -> list[str]:
    resources = client.ResourceV1Api(api).get_api_resources().resources
    return sorted(r.name for r in resources if "/" not in r.name)


def _probe_pod(name: str, node: str, image: str) -> dict:
    # Connect to the API server's service IP (DNAT by kube-proxy, routed over the pod network).
    # busybox nc has no -z: connect with stdin closed; exit 0 only if the TCP connect worked.
    script = (
        'nc -w 5 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT" </dev/null '
        "&& echo API-REACHABLE || echo API-UNREACHABLE"
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "dra-conformance-smoke"}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "probe",
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["/bin/sh", "-c", script],
                }
            ],
        },
    }


def run_smoke(kubeconfig: str, workload_image: str, timeout_s: float = 120) -> SmokeResult:
    api = _api_client(kubeconfig)
    core = client.CoreV1Api(api)
    result = SmokeResult()
    result.served_dra_resources = served_resources(api)
    missing = [r for r in DRA_RESOURCES if r not in result.served_dra_resources]
    if missing:
        result.problems.append(f"resource.k8s.io/v1 does not serve: {', '.join(missing)}")
    nodes = core.list_node().items
    result.workers = sorted(
        n.metadata.name for n in nodes if CONTROL_PLANE_LABEL not in (n.metadata.labels or {})
    )
    namespace = f"dra-smoke-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": namespace}}, field_manager=FIELD_MANAGER)
    try:
        pods = {}
        for node in result.workers:
            pod = _probe_pod(f"probe-{node}"[:60], node, workload_image)
            core.create_namespaced_pod(namespace, pod, field_manager=FIELD_MANAGER)
            pods[node] = pod["metadata"]["name"]
        pending = dict(pods)

        def poll() -> dict[str, str]:
            for node, name in list(pending.items()):
                phase = core.read_namespaced_pod(name, namespace).status.phase
                result.pods_ran_on[node] = phase
                if phase in ("Succeeded", "Failed"):
                    log = core.read_namespaced_pod_log(name, namespace)
                    result.api_via_service[node] = "API-REACHABLE" in log
                    del pending[node]
            return dict(result.pods_ran_on)

        with contextlib.suppress(WaitTimeout):  # the problems below name each pod's last phase
            wait_until(
                poll,
                lambda _: not pending,
                describe=f"the probe pods on {', '.join(pods)} to finish",
                timeout=timeout_s,
            )
        for node in result.workers:
            if result.pods_ran_on.get(node) != "Succeeded":
                result.problems.append(
                    f"probe pod on {node} ended as {result.pods_ran_on.get(node, 'not started')}"
                )
            elif not result.api_via_service.get(node):
                result.problems.append(
                    f"pod on {node} could not reach the API server through "
                    "the kubernetes service IP"
                )
    finally:
        core.delete_namespace(namespace)
    return result
