"""Cluster facts, the run context's JSON hand-over and the live profile check against the real
test API server: its version, discovery, feature gates, RBAC, CEL compilation and validation
decide. Each test has a driver, nodes and classes of its own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.dra_objects import device_class, node, resource_slice, slice_device
from kube_apiserver.access import clients_with_rules
from kube_apiserver.server import ApiServer, ClusterScoped, unique_name

from conformance.install.profile_check import Problem, check_profile_live
from conformance.kube.client import K8sClients
from conformance.model.profile import Profile
from conformance.model.profile_parse import load_profile
from conformance.run.context import ClusterInfo, RunContext, build_run_context, read_cluster_facts

RG = "resource.k8s.io/v1"
POOL_LABEL = "dra-test.example.com/pool"


@dataclass(frozen=True)
class Cluster:
    driver: str
    w1: str
    w2: str
    control_plane: str
    pool: str  # the value of POOL_LABEL on w1 and w2

    def profile_document(self, **changes: Any) -> dict[str, Any]:
        d = self.driver
        document = {
            "apiVersion": "dra-conformance.io/v1alpha1",
            "kind": "DriverProfile",
            "driver": d,
            "deviceClasses": {"default": d},
            "selectors": {
                "big": {"expression": f'device.attributes["{d}"].model == "big"'},
                "small": {"expression": f'device.attributes["{d}"].model == "small"'},
                "fancy": {
                    "expression": f'device.capacity["{d}"].memory.compareTo(quantity("2Gi")) < 0'
                },
            },
            "install": {"method": "preinstalled"},
            "readiness": {"daemonSet": {"name": "plugin", "namespace": "gpu"}},
            "matchAttributes": [f"{d}/pcieRoot", f"{d}/missing"],
            "capacity": f"{d}/memory",
            "verification": {"method": "env", "nameRegex": "^X$", "value": f"attribute:{d}/uuid"},
            "capabilities": ["extended-resource"],
            "extendedResource": {"name": "example.com/gpu", "class": f"ext.{d}"},
        }
        document.update(changes)
        return document

    def profile(self, directory: Path, **changes: Any) -> Profile:
        path = directory / f"{unique_name('p')}.yaml"
        path.write_text(yaml.safe_dump(self.profile_document(**changes)))
        return load_profile(path)


@pytest.fixture
def cluster(cluster_scoped: ClusterScoped) -> Cluster:
    d = f"{unique_name('gpu')}.example.com"
    pool = unique_name("pool")
    c = Cluster(d, unique_name("w1"), unique_name("w2"), unique_name("cp"), pool)
    cluster_scoped.create(node(c.w1, {POOL_LABEL: pool}))
    cluster_scoped.create(node(c.w2, {POOL_LABEL: pool}))
    cluster_scoped.create(node(c.control_plane, {"node-role.kubernetes.io/control-plane": ""}))
    devices = [
        slice_device("gpu-0", d, model="big", uuid="GPU-0", pcieRoot="pci0", memory="80Gi"),
        slice_device("gpu-1", d, model="small", uuid="GPU-1", memory="24Gi"),
        slice_device("gpu-2", d, model="odd", memory="1Gi"),
    ]
    cluster_scoped.create(resource_slice(f"{c.w1}-gpu", d, c.w1, devices))
    cluster_scoped.create(device_class(d, f'device.driver == "{d}"'))
    cluster_scoped.create(device_class(f"ext.{d}", extended="example.com/other"))
    return c


def test_cluster_facts_and_context_round_trip(
    apiserver_k8s: K8sClients, cluster: Cluster, tmp_path: Path
) -> None:
    c, d = cluster, cluster.driver
    profile = c.profile(tmp_path)
    facts = read_cluster_facts(apiserver_k8s, profile)
    assert facts.git_version == "v1.37.2"
    # The default selector leaves the control plane out (other tests' nodes may be listed).
    assert [n for n in facts.nodes if n in (c.w1, c.w2, c.control_plane)] == sorted([c.w1, c.w2])
    assert facts.served_resources == {
        RG: (
            "deviceclasses",
            "devicetaintrules",
            "resourceclaims",
            "resourceclaimtemplates",
            "resourceslices",
        )
    }
    assert facts.feature_gates is not None
    assert facts.feature_gates["DRAPartitionableDevices"] is True  # switched on, as on kind
    assert facts.feature_gates["DRAWorkloadResourceClaims"] is False  # beta, off by default
    assert [x.id for x in facts.devices] == [f"{c.w1}/gpu-{i}" for i in range(3)]
    context = build_run_context(
        run_id="r1",
        run_dir=tmp_path / "run",
        profile=profile,
        cluster=ClusterInfo("kind", "c", "/k", None, True, {c.w1: "c-worker"}),
        facts=facts,
        workload_image="localhost/w:1",
        timeout_scale=2.0,
    )
    assert context.device_sets["big"] == {f"{c.w1}/gpu-0"}
    assert context.device_sets["fancy"] == {f"{c.w1}/gpu-2"}  # evaluated as the scheduler does
    assert context.device_sets["extended-resource"] == {f"{c.w1}/gpu-{i}" for i in range(3)}
    assert context.timeout("podRunning") == 240.0
    assert context.device_taint_rule_api_version() == RG
    assert context.version == (1, 37)
    again = RunContext.from_json(context.to_json())
    assert again == context
    assert again.devices_by_node()[c.w1][0].attributes[f"{d}/uuid"] == "GPU-0"


def test_unreadable_metrics_leave_gates_unknown_with_the_reason(
    kube_apiserver: ApiServer,
    apiserver_k8s: K8sClients,
    api_namespace: str,
    cluster_scoped: ClusterScoped,
    cluster: Cluster,
    tmp_path: Path,
) -> None:
    # Everything the facts need but /metrics (discovery is open to every authenticated user).
    rules = [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["deviceclasses"], "verbs": ["get"]},
    ]
    restricted = clients_with_rules(
        kube_apiserver, apiserver_k8s, cluster_scoped, api_namespace, rules, tmp_path
    )
    facts = read_cluster_facts(restricted, cluster.profile(tmp_path))
    assert facts.feature_gates is None
    assert facts.feature_gates_error == (
        "GET /metrics answered 403 Forbidden; grant the harness 'get' on nonResourceURLs "
        "/metrics or use a cluster-admin kubeconfig"
    )
    assert facts.git_version == "v1.37.2"  # the rest was read


def test_live_profile_check(apiserver_k8s: K8sClients, cluster: Cluster, tmp_path: Path) -> None:
    c, d = cluster, cluster.driver
    selectors = {
        **c.profile_document()["selectors"],
        # Quantity >= int: the API server's CEL compiler refuses it.
        "broken": {"expression": f'device.capacity["{d}"].memory >= 3'},
    }
    profile = c.profile(tmp_path, selectors=selectors, nodes={"selector": f"{POOL_LABEL}={c.pool}"})
    problems = check_profile_live(profile, apiserver_k8s.api_client)
    rejected = [p for p in problems if p.field == "selectors.broken.expression"]
    assert len(rejected) == 1 and rejected[0].message.startswith("the API server rejects it: ")
    assert (
        "spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: "
        in rejected[0].message
    )
    assert "compilation failed" in rejected[0].message
    # The rejected selector is reported once: no note that "the API server accepted" it.
    assert [p.field for p in problems if p.field.startswith("selectors.broken")] == [
        "selectors.broken.expression"
    ]
    rest = [p for p in problems if not p.field.startswith("selectors.broken")]
    assert rest == [
        Problem(
            "readiness.slicesPerNode",
            f"node {c.w2}: 0 ResourceSlice(s) with spec.nodeName={c.w2}, expected at least 1 "
            "(DRA-CORE-002 fails on this)",
        ),
        Problem("readiness.daemonSet", "DaemonSet gpu/plugin not found"),
        Problem(
            "extendedResource.name",
            f"DeviceClass ext.{d} has "
            "spec.extendedResourceName='example.com/other', not 'example.com/gpu'",
        ),
        Problem("matchAttributes[1]", f"no published device has attribute {d}/missing"),
        Problem(
            "verification.value",
            f"1 published device(s) lack attribute {d}/uuid (e.g. "
            f"{c.w1}/gpu-2), so the container cannot be checked for them",
        ),
    ]
    # The compile check was a dry run: no probe claim was stored.
    left = apiserver_k8s.resource.list_namespaced_resource_claim("default").items
    assert not [x for x in left if x.metadata.name.startswith("dra-conformance-profile-check-")]


def test_live_check_of_partitionable_devices(
    apiserver_k8s: K8sClients, cluster: Cluster, tmp_path: Path
) -> None:
    d = cluster.driver
    block = {
        "whole": {"class": f"whole.{d}"},  # no such DeviceClass
        "partition": {"class": d, "expression": f'device.capacity["{d}"].memory >= 3'},
    }
    profile = cluster.profile(tmp_path, partitionableDevices=block)
    problems = check_profile_live(profile, apiserver_k8s.api_client)
    mine = [p for p in problems if p.field.startswith("partitionableDevices.")]
    assert [p.field for p in mine] == [
        "partitionableDevices.whole.class",
        "partitionableDevices.partition.expression",
    ], problems
    assert mine[0].message == f"DeviceClass whole.{d} does not exist (kubectl get deviceclasses)"
    assert mine[1].message.startswith("the API server rejects it: ")
    assert "compilation failed" in mine[1].message


def test_live_check_applies_the_core_002_name_rules(
    apiserver_k8s: K8sClients, cluster_scoped: ClusterScoped, cluster: Cluster, tmp_path: Path
) -> None:
    # Unqualified names are in the driver's domain, for the slice check and for the profile's
    # matchAttributes/capacity alike; a name with two slashes fails DRA-CORE-002 and the check
    # (the API server stores it: only the suite rejects it).
    c, d = cluster, cluster.driver
    devices = [
        {
            "name": "gpu-9",
            "attributes": {"numaNode": {"int": 0}, f"{d}/a/b": {"string": "x"}},
            "capacity": {"memory": {"value": "1Gi"}},
        }
    ]
    cluster_scoped.create(resource_slice(f"{c.w2}-gpu", d, c.w2, devices))
    profile = c.profile(
        tmp_path,
        matchAttributes=["numaNode"],
        capacity="memory",
        nodes={"selector": f"{POOL_LABEL}={c.pool}"},
    )
    problems = check_profile_live(profile, apiserver_k8s.api_client)
    assert [
        str(p) for p in problems if p.field in ("driver", "matchAttributes[0]", "capacity")
    ] == [
        f"error: driver: slice {c.w2}-gpu pool {c.w2} device gpu-9: invalid attributes name(s): "
        f"{d}/a/b (more than one '/' (the form is <domain>/<name> or <name>)) "
        "(DRA-CORE-002 fails on this)"
    ]


def test_live_check_finds_missing_slices_classes_and_overlaps(
    apiserver_k8s: K8sClients, cluster: Cluster, tmp_path: Path
) -> None:
    c, d = cluster, cluster.driver
    nobody, absent = f"{unique_name('none')}.example.com", unique_name("absent")
    document = c.profile_document(
        driver=nobody,
        capabilities=[],
        deviceClasses={"default": absent},
        readiness={"slicesPerNode": 0},
        matchAttributes=[],
        nodes={"selector": f"{POOL_LABEL}={c.pool}"},
    )
    del document["extendedResource"]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(document))
    problems = check_profile_live(load_profile(tmp_path / "p.yaml"), apiserver_k8s.api_client)
    assert [str(p) for p in problems] == [
        f"error: driver: no ResourceSlice has spec.driver={nobody}: is the driver "
        "installed and running? (kubectl get resourceslices; check the driver name)",
        f"error: deviceClasses.default: DeviceClass {absent} does not exist "
        "(kubectl get deviceclasses)",
    ]

    overlapping = c.profile(
        tmp_path,
        nodes={"selector": f"{POOL_LABEL}={c.pool}"},
        selectors={
            "a": {"expression": f'device.attributes["{d}"].model == "big"'},
            "b": {
                "expression": f'device.driver == "{d}" && device.attributes["{d}"].model == "big"'
            },
            "c": {"expression": f'device.attributes["{d}"].model == "huge"'},
        },
    )
    problems = check_profile_live(overlapping, apiserver_k8s.api_client)
    selector_problems = [str(p) for p in problems if p.field.startswith("selectors")]
    assert selector_problems == [
        "error: selectors.c: matches none of the 3 published devices (with the selectors of "
        f"DeviceClass {d})",
        f"error: selectors.b: selectors a and b both match 1 device(s): {c.w1}/gpu-0; "
        "selectors must pick disjoint kinds of device",
    ]
