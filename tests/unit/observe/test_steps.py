"""Allure steps and attachments of the scenario library (conformance/observe/steps.py,
conformance/faults/steps.py): what a run with `--alluredir` records, and that without it
nothing is recorded or built.

The runs are real pytest subprocesses with allure-pytest; the tiny suite uses the library's own
step helpers (a Workloads-like helper, `waits.wait_until`, an `InjectorBase` subclass), so the
result JSON is the one a scenario run writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.observe import steps

pytest_plugins = ["pytester"]

SUITE = '''
import pytest

from conformance.faults import DeviceRef, FaultKind, InjectorBase
from conformance.faults.steps import StepInjector
from conformance.kube.waits import wait_until
from conformance.observe.steps import attach_yaml, step

CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {
        "name": "claim",
        "namespace": "ns",
        "managedFields": [{"manager": "kube-scheduler"}],
        "annotations": {"note": "token: abcdefgh12345678"},
    },
    "status": {"allocation": {"devices": {"results": [{"device": "gpu-0"}]}}},
}


class Workloads:
    """Like conformance.scenario_api.workloads.Workloads, without a cluster."""

    def claim(self, name):
        with step(f"create claim ns/{name}"):
            return dict(CLAIM)

    def wait_allocated(self, name):
        claim = wait_until(
            lambda: CLAIM, lambda c: bool(c["status"]), describe=f"claim ns/{name}", timeout=5
        )
        attach_yaml(f"ResourceClaim {name} (allocated)", claim)
        return claim

    def wait_running(self, name):
        with step(f"wait for pod ns/{name} Running", is_wait=True):
            wait_until(lambda: "Pending", lambda p: p == "Running", describe="x", timeout=0.3)


class Injector(InjectorBase):
    kinds = frozenset({FaultKind.UNHEALTHY})

    def mark_unhealthy(self, device, message=""):
        pass

    def restore(self):
        pass


class Plain:
    """A vendor's injector implementing the protocol without InjectorBase."""

    def withdraw(self, device):
        pass


def test_steps():
    workload = Workloads()
    workload.claim("claim")
    workload.wait_allocated("claim")
    attach_yaml("a secret", {"kind": "Secret", "data": {"key": "c2VjcmV0"}})
    with Injector() as injector:
        injector.mark_unhealthy(DeviceRef("gpu.example.com", "pool-1", "gpu-0"))
    StepInjector(Plain()).withdraw(DeviceRef("gpu.example.com", "pool-1", "gpu-1", "w1"))


def test_failing_step():
    Workloads().wait_running("pod")
'''


def run_suite(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_tiny=SUITE)
    return pytester.runpytest_subprocess(
        "-p", "no:dra_conformance", "-p", "no:cacheprovider", *args
    )


def results_by_name(results_dir: Path) -> dict[str, dict[str, Any]]:
    found = [json.loads(p.read_text()) for p in results_dir.glob("*-result.json")]
    return {r["name"]: r for r in found}


def all_steps(node: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for child in node.get("steps") or ():
        out += [child, *all_steps(child)]
    return out


def test_a_run_with_alluredir_records_named_steps_and_yaml_attachments(
    pytester: pytest.Pytester,
) -> None:
    results_dir = pytester.path / "allure-results"
    run_suite(pytester, f"--alluredir={results_dir}").assert_outcomes(passed=1, failed=1)
    results = results_by_name(results_dir)

    passed = results["test_steps"]
    names = [s["name"] for s in passed["steps"]]
    assert names == [
        "create claim ns/claim",
        "wait for claim ns/claim",
        "inject fault unhealthy on device gpu.example.com/pool-1/gpu-0",
        "clear every fault this injector made",
        "inject fault withdraw on device gpu.example.com/pool-1/gpu-1 (node w1)",
    ]
    assert {s["status"] for s in passed["steps"]} == {"passed"}
    attachments = {a["name"]: a for a in passed["attachments"]}
    claim = attachments["ResourceClaim claim (allocated)"]
    assert claim["type"] == "application/yaml"
    text = (results_dir / claim["source"]).read_text()
    assert "kind: ResourceClaim" in text and "gpu-0" in text
    assert "managedFields" not in text  # kept small
    assert "abcdefgh12345678" not in text and "<redacted>" in text
    secret = (results_dir / attachments["a secret"]["source"]).read_text()
    assert "c2VjcmV0" not in secret and "<not attached>" in secret

    failed = results["test_failing_step"]
    assert failed["status"] == "failed"
    [outer] = failed["steps"]  # the wait inside a wait step is not a second step
    assert outer["name"] == "wait for pod ns/pod Running"
    assert outer["status"] == "failed"
    assert "timed out" in outer["statusDetails"]["message"]
    assert "steps" not in outer or outer["steps"] == []


def test_without_alluredir_steps_are_harmless_and_nothing_is_built(
    pytester: pytest.Pytester,
) -> None:
    result = run_suite(pytester)
    result.assert_outcomes(passed=1, failed=1)
    assert "timed out" in result.stdout.str()  # the failing step's error still propagates
    assert not (pytester.path / "allure-results").exists()


def test_in_process_without_a_listener_nothing_is_recorded() -> None:
    assert not steps.recording()

    def expensive() -> dict[str, str]:
        raise AssertionError("built although Allure is not recording")

    steps.attach_yaml("never built", expensive)
    with pytest.raises(ValueError, match="inside"), steps.step("a step"):
        raise ValueError("inside")


def test_render_yaml_is_small_and_redacted() -> None:
    pod = {
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "managedFields": [{"manager": "x"}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
        },
        "spec": {
            "containers": [{"env": [{"name": "AUTH", "value": "Bearer s3cr3t-value"}]}],
            "nodeName": None,
        },
        "status": {"message": "x" * (steps.ATTACHMENT_LIMIT + 100)},
    }
    text = steps.render_yaml(pod)
    assert "managedFields" not in text and "last-applied" not in text and "nodeName" not in text
    assert "s3cr3t-value" not in text
    assert len(text) < steps.ATTACHMENT_LIMIT + 100
    assert text.rstrip().endswith("more characters not attached")
