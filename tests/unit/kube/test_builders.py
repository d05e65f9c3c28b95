"""Builders produce objects the client's strict models accept field for field.

`from_dict` alone silently drops unknown keys, so each object is checked twice: strict
`model_validate` (extra="forbid" rejects a misspelt field) and a lossless round trip.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from typing import Any

import pytest
from kubernetes import client as k8s

from conformance.kube import builders as b
from conformance.kube import claim_requests as req
from conformance.kube.builders import Builders, PodClaim, workload_command
from conformance.model.naming import RUN_LABEL, TEST_LABEL
from conformance.model.profile import Verification

B = Builders("run-1", "tests_x.py__test_y", Verification("env", "pool/device", None, "^DRA_"))
D = "gpu.example.com"


def assert_valid(model: Any, body: dict[str, Any]) -> Any:
    parsed = model.model_validate(body)
    assert parsed.model_dump(by_alias=True, exclude_none=True) == body
    assert model.from_dict(body).model_dump(by_alias=True, exclude_none=True) == body
    return parsed


def test_a_misspelt_field_is_caught() -> None:
    body = B.resource_claim("c", "ns", [req.request("r", D)])
    body["spec"]["devices"]["requests"][0]["exactly"]["deviceClass"] = D
    with pytest.raises(Exception, match="deviceClass"):
        assert_valid(k8s.ResourceV1ResourceClaim, body)


def test_every_object_carries_the_run_labels() -> None:
    for body in (
        B.namespace("n"),
        B.device_class("c"),
        B.priority_class("p", 10),
        B.resource_claim("c", "ns", [req.request("r", D)]),
        B.device_taint_rule("t", driver=D, key="k", effect="NoSchedule"),
    ):
        assert body["metadata"]["labels"] == {RUN_LABEL: "run-1", TEST_LABEL: "tests_x.py__test_y"}


def test_device_class() -> None:
    body = B.device_class(
        D,
        selectors=[f'device.driver == "{D}"'],
        config=[req.opaque_config(D, {"mode": "fast"})],
        extended_resource_name="example.com/gpu",
    )
    parsed = assert_valid(k8s.V1DeviceClass, body)
    assert parsed.spec.extended_resource_name == "example.com/gpu"
    assert parsed.spec.config[0].opaque.parameters == {"mode": "fast"}


def test_resource_claim_with_every_request_form() -> None:
    tol = req.toleration(
        "example.com/maint", operator="Exists", effect="NoExecute", toleration_seconds=30
    )
    body = B.resource_claim(
        "c",
        "ns",
        [
            req.request("one", D, selectors=['device.attributes["gpu.example.com"].model == "A"']),
            req.request("two", D, count=2, tolerations=[tol], capacity={f"{D}/memory": "8Gi"}),
            req.request("all", D, all_devices=True),
            req.request("admin", D, admin_access=True),
            req.first_available(
                "pick",
                [
                    req.subrequest("big", D, selectors=["true"]),
                    req.subrequest("small", D, count=2),
                ],
            ),
        ],
        constraints=[req.match_attribute(f"{D}/pcieRoot", ["one", "two"])],
        config=[req.opaque_config(D, {"k": "v"}, ["one"])],
    )
    parsed = assert_valid(k8s.ResourceV1ResourceClaim, body)
    requests = parsed.spec.devices.requests
    assert requests[1].exactly.allocation_mode == "ExactCount" and requests[1].exactly.count == 2
    assert requests[1].exactly.tolerations[0].toleration_seconds == 30
    assert requests[2].exactly.allocation_mode == "All"
    assert requests[3].exactly.admin_access is True
    assert [s.name for s in requests[4].first_available] == ["big", "small"]
    assert parsed.spec.devices.constraints[0].match_attribute == f"{D}/pcieRoot"


def test_count_and_all_are_exclusive() -> None:
    with pytest.raises(ValueError, match="mutually exclusive"):
        req.request("r", D, count=2, all_devices=True)


def test_resource_claim_template() -> None:
    body = B.resource_claim_template("t", "ns", [req.request("r", D)])
    parsed = assert_valid(k8s.V1ResourceClaimTemplate, body)
    assert parsed.spec.metadata.labels[RUN_LABEL] == "run-1"


def test_pod_with_claims_and_per_container_requests() -> None:
    body = B.pod(
        "p",
        "ns",
        image="localhost/w:1",
        claims=[PodClaim("shared", claim="c"), PodClaim("own", template="t")],
        containers=[
            b.container("a", claims=[("shared", "one")]),
            b.container("b", claims=["own"], limits={"example.com/gpu": 1}),
        ],
        node_selector={"kubernetes.io/hostname": "w1"},
        priority_class_name="high",
        tolerations=[{"key": "x", "operator": "Exists"}],
        restart_policy="Never",
    )
    parsed = assert_valid(k8s.V1Pod, body)
    assert parsed.spec.resource_claims[1].resource_claim_template_name == "t"
    assert parsed.spec.containers[0].resources.claims[0].request == "one"
    assert parsed.spec.containers[1].resources.limits == {"example.com/gpu": "1"}
    assert parsed.spec.containers[0].command == workload_command(B.verification)


def test_pod_default_container_uses_every_claim_and_node_name() -> None:
    body = B.pod("p", "ns", image="img", claims=[PodClaim("a", claim="c")], node_name="w1")
    parsed = assert_valid(k8s.V1Pod, body)
    assert parsed.spec.node_name == "w1"
    assert [c.name for c in parsed.spec.containers[0].resources.claims] == ["a"]


def test_pod_claim_needs_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one of claim or template"):
        PodClaim("x").to_dict()


def test_deployment_priority_class_pdb_and_taint_rule() -> None:
    pod = B.pod("p", "ns", image="img", claims=[PodClaim("a", template="t")], node_name="w1")
    dep = assert_valid(k8s.V1Deployment, B.deployment("d", "ns", replicas=2, pod=pod))
    assert dep.spec.template.spec.node_name is None  # a template never pins a node
    assert dep.spec.selector.match_labels == {"app.kubernetes.io/name": "d"}
    assert dep.spec.template.metadata.labels["app.kubernetes.io/name"] == "d"
    assert_valid(
        k8s.V1PriorityClass, B.priority_class("p", 1000, preemption_policy="Never", description="x")
    )
    assert_valid(
        k8s.V1PodDisruptionBudget,
        B.pod_disruption_budget("b", "ns", match_labels={"a": "b"}, max_unavailable=1),
    )
    rule = assert_valid(
        k8s.V1DeviceTaintRule,
        B.device_taint_rule(
            "t",
            driver=D,
            pool="w1",
            device="gpu-0",
            key="example.com/fault",
            value="1",
            effect="NoExecute",
        ),
    )
    assert rule.spec.device_selector.device == "gpu-0"
    beta = B.device_taint_rule(
        "t", driver=D, key="k", effect="NoSchedule", api_version="resource.k8s.io/v1beta2"
    )
    assert_valid(k8s.V1beta2DeviceTaintRule, beta)


def test_pdb_needs_exactly_one_bound() -> None:
    with pytest.raises(ValueError, match="exactly one of"):
        B.pod_disruption_budget("b", "ns", match_labels={}, min_available=1, max_unavailable=1)


def test_workload_command_prints_markers_and_exits_on_demand(tmp_path: Any) -> None:
    """Run the real command with the host's sh: markers, env, file block, and /tmp/exit."""
    secret = tmp_path / "devices"
    secret.write_text("gpu-0\ngpu-1\n")
    argv = workload_command(Verification("file", "device", None, None, str(secret)))
    script = argv[2].replace("/tmp/exit", str(tmp_path / "exit"))
    proc = subprocess.Popen(
        ["/bin/sh", "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        env={"GPU_X": "1", "PATH": "/usr/bin:/bin"},
    )
    (tmp_path / "exit").touch()
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0
    lines = out.splitlines()
    assert lines[0] == b.ENV_BEGIN and b.ENV_END in lines and "GPU_X=1" in lines
    assert lines[lines.index(b.FILE_BEGIN) + 1 : lines.index(b.FILE_END)] == ["gpu-0", "gpu-1"]


def test_workload_command_ends_promptly_on_sigterm(tmp_path: Any) -> None:
    argv = workload_command()
    argv[2] = argv[2].replace("/tmp/exit", str(tmp_path / "never"))
    # Each round's sleep made long: the trap must run while the shell waits for it, not once
    # it is over. Then "promptly" needs no tight bound that a loaded machine could exceed.
    assert "sleep 1 & wait" in argv[2]
    argv[2] = argv[2].replace("sleep 1 & wait", "sleep 600 & wait")
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True) as proc:
        try:
            # the environment block comes after the trap is set, however slowly the shell starts
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.strip() == b.ENV_END:
                    break
            assert proc.poll() is None  # still sleeping, waiting for the exit file
            proc.terminate()
            assert proc.wait(timeout=120) == 0  # not after the 600 s sleep
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the shell's sleep, left behind
