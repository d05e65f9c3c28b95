"""Cluster facts, the run context's JSON hand-over, and the live profile check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from harness_fakeapi import FakeAPI, device_class, node, resource_slice, slice_device

from conformance.install.profile_check import Problem, check_profile_live
from conformance.kube.client import K8sClients
from conformance.model.profile_parse import load_profile
from conformance.run.context import (
    ClusterInfo,
    RunContext,
    build_run_context,
    parse_feature_gates,
    parse_version,
    read_cluster_facts,
)

D = "gpu.example.com"
RG = "resource.k8s.io/v1"
PROFILE = {
    "apiVersion": "dra-conformance.io/v1alpha1",
    "kind": "DriverProfile",
    "driver": D,
    "deviceClasses": {"default": D},
    "selectors": {
        "big": {"expression": f'device.attributes["{D}"].model == "big"'},
        "small": {"expression": f'device.attributes["{D}"].model == "small"'},
        "fancy": {"expression": f'device.attributes["{D}"].memory >= 3'},
    },
    "install": {"method": "preinstalled"},
    "readiness": {"daemonSet": {"name": "plugin", "namespace": "gpu"}},
    "matchAttributes": [f"{D}/pcieRoot", f"{D}/missing"],
    "capacity": f"{D}/memory",
    "verification": {"method": "env", "nameRegex": "^X$", "value": f"attribute:{D}/uuid"},
    "capabilities": ["extended-resource"],
    "extendedResource": {"name": "example.com/gpu", "class": "ext.gpu.example.com"},
}
METRICS = """# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="DRADeviceTaintRules",stage="BETA"} 0
kubernetes_feature_enabled{stage="",name="DynamicResourceAllocation"} 1
apiserver_request_total{code="200"} 12
"""


def test_parse_feature_gates() -> None:
    assert parse_feature_gates(METRICS) == {
        "DRADeviceTaintRules": False,
        "DynamicResourceAllocation": True,
    }


@pytest.mark.parametrize(
    "text,version",
    [("v1.37.2", (1, 37)), ("v1.36.0-beta.0+abc", (1, 36)), ("1.35", (1, 35)), ("weird", None)],
)
def test_parse_version(text: str, version: tuple[int, int] | None) -> None:
    assert parse_version(text) == version


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    server = FakeAPI()
    server.raw["/version"] = (200, {"gitVersion": "v1.37.2", "major": "1", "minor": "37"})
    server.raw["/apis/resource.k8s.io"] = (
        200,
        {
            "kind": "APIGroup",
            "name": "resource.k8s.io",
            "versions": [
                {"groupVersion": RG, "version": "v1"},
                {"groupVersion": "resource.k8s.io/v1beta2", "version": "v1beta2"},
            ],
        },
    )
    server.raw["/apis/resource.k8s.io/v1"] = (
        200,
        {
            "resources": [
                {"name": "deviceclasses"},
                {"name": "devicetaintrules"},
                {"name": "devicetaintrules/status"},
                {"name": "resourceslices"},
            ]
        },
    )
    server.raw["/apis/resource.k8s.io/v1beta2"] = (200, {"resources": [{"name": "deviceclasses"}]})
    server.raw["/metrics"] = (200, METRICS)
    for name in ("w1", "w2"):
        server.add("nodes", node(name))
    server.add("nodes", node("cp", {"node-role.kubernetes.io/control-plane": ""}))
    server.add(
        "resourceslices",
        resource_slice(
            "w1-gpu",
            D,
            "w1",
            [
                slice_device("gpu-0", D, model="big", uuid="GPU-0", pcieRoot="pci0", memory="80Gi"),
                slice_device("gpu-1", D, model="small", uuid="GPU-1", memory="24Gi"),
                slice_device("gpu-2", D, model="odd", memory="1Gi"),
            ],
        ),
        gv=RG,
    )
    server.add("deviceclasses", device_class(D, f'device.driver == "{D}"'), gv=RG)
    server.add(
        "deviceclasses", device_class("ext.gpu.example.com", extended="example.com/other"), gv=RG
    )
    yield server
    server.close()


@pytest.fixture
def profile(tmp_path: Path):  # noqa: ANN201
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(PROFILE))
    return load_profile(tmp_path / "p.yaml")


def test_cluster_facts_and_context_round_trip(api: FakeAPI, profile, tmp_path: Path) -> None:
    k8s: K8sClients = api.clients()
    facts = read_cluster_facts(k8s, profile)
    assert facts.git_version == "v1.37.2"
    assert facts.nodes == ("w1", "w2")  # control plane excluded by the default selector
    assert facts.served_resources == {
        RG: ("deviceclasses", "devicetaintrules", "resourceslices"),
        "resource.k8s.io/v1beta2": ("deviceclasses",),
    }
    assert facts.feature_gates == {"DRADeviceTaintRules": False, "DynamicResourceAllocation": True}
    assert [d.id for d in facts.devices] == ["w1/gpu-0", "w1/gpu-1", "w1/gpu-2"]
    context = build_run_context(
        run_id="r1",
        run_dir=tmp_path / "run",
        profile=profile,
        cluster=ClusterInfo("kind", "c", "/k", None, True, {"w1": "c-worker"}),
        facts=facts,
        workload_image="localhost/w:1",
        timeout_scale=2.0,
    )
    assert context.device_sets["big"] == {"w1/gpu-0"}
    assert context.device_sets["fancy"] is None  # `>=` is beyond the evaluator
    assert context.device_sets["extended-resource"] == {"w1/gpu-0", "w1/gpu-1", "w1/gpu-2"}
    assert context.timeout("podRunning") == 240.0
    assert context.device_taint_rule_api_version() == RG
    assert context.version == (1, 37)
    again = RunContext.from_json(context.to_json())
    assert again == context
    assert again.devices_by_node()["w1"][0].attributes[f"{D}/uuid"] == "GPU-0"


def test_unreadable_metrics_leave_gates_unknown_with_the_reason(api: FakeAPI, profile) -> None:
    api.raw["/metrics"] = (403, {"kind": "Status", "code": 403})
    facts = read_cluster_facts(api.clients(), profile)
    assert facts.feature_gates is None
    assert facts.feature_gates_error == (
        "GET /metrics answered 403 Forbidden; grant the harness 'get' on nonResourceURLs "
        "/metrics or use a cluster-admin kubeconfig"
    )


def test_live_profile_check(api: FakeAPI, profile) -> None:
    def reject_fancy(method, path, query, body):  # noqa: ANN001, ANN202
        if method == "POST" and path.endswith("/resourceclaims"):
            expression = body["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]
            if ">=" in expression["cel"]["expression"]:
                return 422, {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "code": 422,
                    "status": "Failure",
                    "reason": "Invalid",
                    "message": "spec.devices.requests[0].exactly.selectors[0].cel."
                    "expression: Invalid value: compilation failed",
                }
        return None

    api.handlers.append(reject_fancy)
    problems = check_profile_live(profile, api.clients().api_client)
    assert problems == [
        Problem(
            "readiness.slicesPerNode",
            "node w2: 0 ResourceSlice(s) with spec.nodeName=w2, expected at least 1 "
            "(DRA-CORE-002 fails on this)",
        ),
        Problem("readiness.daemonSet", "DaemonSet gpu/plugin not found"),
        Problem(
            "extendedResource.name",
            "DeviceClass ext.gpu.example.com has "
            "spec.extendedResourceName='example.com/other', not 'example.com/gpu'",
        ),
        Problem(
            "selectors.fancy.expression",
            "the API server rejects it: spec.devices."
            "requests[0].exactly.selectors[0].cel.expression: Invalid value: "
            "compilation failed",
        ),
        Problem(
            "selectors.fancy",
            "not checked which devices it matches: only conjunctions of "
            "== comparisons are evaluated locally (the API server accepted the expression)",
            "note",
        ),
        Problem("matchAttributes[1]", f"no published device has attribute {D}/missing"),
        Problem(
            "verification.value",
            f"1 published device(s) lack attribute {D}/uuid (e.g. "
            "w1/gpu-2), so the container cannot be checked for them",
        ),
    ]
    dry_runs = [p for m, p in api.requests if m == "POST"]
    assert dry_runs and all("dryRun=All" in p for p in dry_runs)


def test_live_check_applies_the_core_002_name_rules(api: FakeAPI, tmp_path: Path) -> None:
    # Unqualified names are in the driver's domain, for the slice check and for the profile's
    # matchAttributes/capacity alike; a name with two slashes fails DRA-CORE-002 and the check.
    devices = [
        {
            "name": "gpu-9",
            "attributes": {"numaNode": {"int": 0}, f"{D}/a/b": {"string": "x"}},
            "capacity": {"memory": {"value": "1Gi"}},
        }
    ]
    api.add("resourceslices", resource_slice("w2-gpu", D, "w2", devices), gv=RG)
    data = {**PROFILE, "matchAttributes": ["numaNode"], "capacity": "memory"}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(data))
    problems = check_profile_live(load_profile(tmp_path / "p.yaml"), api.clients().api_client)
    assert [
        str(p) for p in problems if p.field in ("driver", "matchAttributes[0]", "capacity")
    ] == [
        f"error: driver: slice w2-gpu pool w2 device gpu-9: invalid attributes name(s): {D}/a/b "
        "(more than one '/' (the form is <domain>/<name> or <name>)) (DRA-CORE-002 fails on this)"
    ]


def test_live_check_finds_missing_slices_classes_and_overlaps(api: FakeAPI, tmp_path: Path) -> None:
    data = {
        **PROFILE,
        "driver": "none.example.com",
        "capabilities": [],
        "deviceClasses": {"default": "absent.example.com"},
        "readiness": {"slicesPerNode": 0},
        "matchAttributes": [],
    }
    del data["extendedResource"]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(data))
    problems = check_profile_live(load_profile(tmp_path / "p.yaml"), api.clients().api_client)
    assert [str(p) for p in problems] == [
        "error: driver: no ResourceSlice has spec.driver=none.example.com: is the driver "
        "installed and running? (kubectl get resourceslices; check the driver name)",
        "error: deviceClasses.default: DeviceClass absent.example.com does not exist "
        "(kubectl get deviceclasses)",
    ]

    overlapping = {
        **PROFILE,
        "selectors": {
            "a": {"expression": f'device.attributes["{D}"].model == "big"'},
            "b": {
                "expression": f'device.driver == "{D}" && device.attributes["{D}"].model == "big"'
            },
            "c": {"expression": f'device.attributes["{D}"].model == "huge"'},
        },
    }
    (tmp_path / "o.yaml").write_text(yaml.safe_dump(overlapping))
    problems = check_profile_live(load_profile(tmp_path / "o.yaml"), api.clients().api_client)
    selector_problems = [str(p) for p in problems if p.field.startswith("selectors")]
    assert selector_problems == [
        "error: selectors.c: matches none of the 3 published devices (with the selectors of "
        "DeviceClass gpu.example.com)",
        "error: selectors.b: selectors a and b both match w1/gpu-0; selectors must pick "
        "disjoint kinds of device",
    ]
