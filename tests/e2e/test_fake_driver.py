"""The bundled fake driver on the real kubelet (issue: fake driver). These tests may name the
fake driver: they test it, not a driver under certification."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fakedriver.client.channel import FAKE_DRIVER_NAMESPACE, FakeDriverControl

from conformance.images import harness
from conformance.install import installer
from conformance.kube import objects, state, waits
from conformance.kube.builders import Builders, PodClaim
from conformance.kube.claim_requests import request
from conformance.kube.client import K8sClients
from conformance.model.profile import Profile

DRIVER = "fake.dra-conformance.io"
ACCEL_CLASS = f"accelerator.{DRIVER}"
MODEL = f'device.attributes["{DRIVER}"].model'
CDI_DIR = "/var/run/cdi"


@pytest.fixture
def ns(k8s: K8sClients, fake_driver: Profile) -> Iterator[str]:
    name = f"e2e-fake-{uuid.uuid4().hex[:8]}"
    objects.create(k8s, Builders("e2e-fake-driver").namespace(name))
    yield name
    objects.delete(k8s, "Namespace", name)
    waits.wait_for_deleted(
        lambda: state.read_namespace(k8s, name),
        describe=f"namespace {name} to be deleted",
        timeout=180,
    )


@pytest.fixture
def build(fake_driver: Profile) -> Builders:
    return Builders("e2e-fake-driver", verification=fake_driver.verification)


def _slices(k8s: K8sClients) -> list[dict[str, Any]]:
    items = k8s.resource.list_resource_slice(field_selector=f"spec.driver={DRIVER}").items
    return [k8s.to_dict(s) for s in items]


def _devices_by_node(k8s: K8sClients) -> dict[str, set[str]]:
    by_node: dict[str, set[str]] = {}
    for s in _slices(k8s):
        node = s["spec"].get("nodeName")
        by_node.setdefault(node, set()).update(d["name"] for d in s["spec"].get("devices", []))
    return by_node


def _run_claim_pod(
    k8s: K8sClients, build: Builders, ns: str, workload_image: str, name: str, model: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    objects.create(
        k8s,
        build.resource_claim(
            name, ns, [request("dev", ACCEL_CLASS, selectors=[f'{MODEL} == "{model}"'])]
        ),
    )
    objects.create(
        k8s, build.pod(name, ns, image=workload_image, claims=[PodClaim("dev", claim=name)])
    )
    pod = waits.wait_for_pod_running(k8s, ns, name, timeout=120)
    claim = state.read_claim(k8s, ns, name)
    assert claim is not None
    return pod, claim


def _node_has_file(node: str, path: str) -> bool:
    return subprocess.run(["docker", "exec", node, "test", "-e", path]).returncode == 0


def _cdi_files(node: str, claim_uid: str) -> list[str]:
    out = subprocess.run(["docker", "exec", node, "ls", CDI_DIR], capture_output=True, text=True)
    return [f for f in out.stdout.split() if claim_uid in f]


def test_catalog_devices_published_on_both_workers(k8s, fake_driver, kind_cluster):
    by_node = _devices_by_node(k8s)
    workers = sorted(n for n in kind_cluster.nodes() if "control-plane" not in n)
    assert len(workers) == 2
    first, second = workers  # <name>-worker, <name>-worker2
    assert by_node.get(first) == {"fa80-0", "fa80-1", "ff16-0", "fs32-0", "fx-0"}
    assert {"fa24-0", "fa24-1", "fa24-2", "fa24-3", "fp48-0-whole"} <= by_node.get(second, set())
    assert {f"fp48-0-p{i}" for i in range(4)} <= by_node[second]
    for s in _slices(k8s):
        assert s["spec"]["pool"]["name"] == s["spec"]["nodeName"]
        owners = s["metadata"].get("ownerReferences") or []
        assert [o["kind"] for o in owners] == ["Node"]


def test_claim_by_model_runs_on_right_worker_and_sees_only_its_device(
    k8s, build, ns, workload_image, kind_cluster
):
    pod, claim = _run_claim_pod(k8s, build, ns, workload_image, "big", "fa-24")
    [result] = state.allocation_results(claim)
    assert result.driver == DRIVER and result.device.startswith("fa24-")
    assert pod["spec"]["nodeName"] == result.pool  # one pool per node, named after it
    assert pod["spec"]["nodeName"].endswith("-worker2")
    env = state.pod_workload_output(k8s, ns, "big").env
    assigned = {k: v for k, v in env.items() if k.startswith("DRA_ASSIGNED_")}
    assert assigned == {
        f"DRA_ASSIGNED_{result.device.upper().replace('-', '_')}": f"{result.pool}/{result.device}"
    }
    prefix = f"DRA_DEVICE_{result.device.upper().replace('-', '_')}"
    assert env[f"{prefix}_MODEL"] == "fa-24"
    assert env[f"{prefix}_CLAIM_UID"] == claim["metadata"]["uid"]
    assert env[f"{prefix}_REQUEST"] == "dev"


def test_pod_deletion_removes_cdi_spec_and_frees_device(k8s, build, ns, workload_image):
    # fa-80 devices: two on the first worker; take both, free one, allocate it again.
    pods = [_run_claim_pod(k8s, build, ns, workload_image, f"a{i}", "fa-80") for i in range(2)]
    pod, claim = pods[0]
    node, uid = pod["spec"]["nodeName"], claim["metadata"]["uid"]
    assert _cdi_files(node, uid), "prepare wrote no CDI spec for the claim"
    device = state.allocation_results(claim)[0].device
    objects.delete(k8s, "Pod", "a0", ns)
    waits.wait_for_deleted(
        lambda: state.read_pod(k8s, ns, "a0"), describe="pod a0 deleted", timeout=120
    )
    waits.wait_until(
        lambda: state.read_claim(k8s, ns, "a0"),
        lambda c: not state.is_allocated(c),
        describe="claim a0 deallocated",
        timeout=60,
        show=state.claim_summary,
    )
    assert _cdi_files(node, uid) == [], "the CDI spec outlived the pod"
    objects.delete(k8s, "ResourceClaim", "a0", ns, "resource.k8s.io/v1")
    _, again = _run_claim_pod(k8s, build, ns, workload_image, "b0", "fa-80")
    assert state.allocation_results(again)[0].device == device


def test_unhealthy_fault_shows_in_allocated_resources_status(k8s, build, ns, workload_image):
    pod, claim = _run_claim_pod(k8s, build, ns, workload_image, "h", "fa-24")
    result = state.allocation_results(claim)[0]
    control = FakeDriverControl(k8s.core)
    try:
        control.set_unhealthy(result.pool, result.device, "ecc errors")

        def health(p: dict[str, Any] | None) -> list[str]:
            statuses = (p or {}).get("status", {}).get("containerStatuses") or []
            return [
                h.get("health")
                for c in statuses
                for r in c.get("allocatedResourcesStatus") or []
                for h in r.get("resources") or []
            ]

        waits.wait_until(
            lambda: state.read_pod(k8s, ns, "h"),
            lambda p: "Unhealthy" in health(p),
            describe="allocatedResourcesStatus to report Unhealthy",
            timeout=90,
            show=lambda p: (p or {}).get("status", {}).get("containerStatuses"),
        )
        control.set_healthy(result.pool, result.device)
        waits.wait_until(
            lambda: state.read_pod(k8s, ns, "h"),
            lambda p: health(p) == ["Healthy"],
            describe="allocatedResourcesStatus back to Healthy",
            timeout=90,
            show=lambda p: (p or {}).get("status", {}).get("containerStatuses"),
        )
    finally:
        control.clear(result.pool)


def test_plugin_restart_keeps_workload_and_new_claims_work(
    k8s, build, ns, workload_image, fake_driver, kind_cluster
):
    pod, _ = _run_claim_pod(k8s, build, ns, workload_image, "before", "fa-24")
    node = pod["spec"]["nodeName"]
    plugin_pods = k8s.core.list_namespaced_pod(
        FAKE_DRIVER_NAMESPACE, field_selector=f"spec.nodeName={node}"
    ).items
    assert len(plugin_pods) == 1
    k8s.core.delete_namespaced_pod(plugin_pods[0].metadata.name, FAKE_DRIVER_NAMESPACE)
    time.sleep(2)
    installer.wait_ready(fake_driver, str(kind_cluster.kubeconfig), None, timeout=180)
    running = state.read_pod(k8s, ns, "before")
    assert state.pod_phase(running) == "Running"
    restarts = [c.get("restartCount", 0) for c in running["status"]["containerStatuses"]]
    assert restarts == [0]
    _run_claim_pod(k8s, build, ns, workload_image, "after", "fa-24")


def test_plugin_pods_stayed_alive_under_their_liveness_probe(k8s, fake_driver):
    """Last in the file, after the tests above (faults, a deleted plugin pod): each plugin pod
    runs this checkout's image with the liveness probe, answers /livez through the API server's
    pod proxy, and was never restarted nor failed a liveness probe."""
    pods = k8s.core.list_namespaced_pod(
        FAKE_DRIVER_NAMESPACE, label_selector="app.kubernetes.io/name=fake-dra-kubelet-plugin"
    ).items
    assert len(pods) == 2, [p.metadata.name for p in pods]
    for pod in pods:
        (container,) = pod.spec.containers
        assert container.image == harness.fake_driver_image_ref()
        assert container.liveness_probe.http_get.path == "/livez"
        (status,) = pod.status.container_statuses
        assert status.restart_count == 0, f"{pod.metadata.name}: {status.last_state}"
        answer = k8s.core.connect_get_namespaced_pod_proxy_with_path(
            f"{pod.metadata.name}:{container.ports[0].container_port}",
            FAKE_DRIVER_NAMESPACE,
            "livez",
        )
        assert answer.startswith("alive: "), answer
    unhealthy = k8s.core.list_namespaced_event(
        FAKE_DRIVER_NAMESPACE, field_selector="reason=Unhealthy"
    ).items
    assert [e.message for e in unhealthy if "Liveness probe failed" in (e.message or "")] == []
