"""A run killed by SIGKILL leaves its objects behind; the next run names them in its header and
`dra-conformance cleanup --run-id ID` removes every one: namespaces (and the claims in them),
labelled DeviceTaintRules and PriorityClasses, the cordon (and the node's unschedulable taint)
and the faults injected through the fake driver's control channel.

The killed run is real (DRA-DRAIN-001 cordons a node and holds claims in its namespace); while
it is alive, its fault plug-in, a DeviceTaintRule and a PriorityClass are added in its name, the
way a test of that run would have (killed before its fixtures undo them).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakedriver.faultcontrol import FakeDriverControl
from fakedriver.faultplugin import FakeDriverFaults
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from conformance.cluster import kind
from conformance.faults import DeviceRef, FaultContext, FaultKind
from conformance.kube import objects
from conformance.kube.builders import Builders
from conformance.kube.client import K8sClients
from conformance.model.naming import CORDONED_BY_LABEL, RUN_LABEL
from conformance.model.profile import SUITE_ROOT, Profile

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
RULE_VERSION = "resource.k8s.io/v1"


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "conformance.cli", *args]


def _run_cmd(cluster: str, run_id: str, report_dir: Path, *extra: str) -> list[str]:
    return _cli(
        "run",
        "--profile",
        "drivers/fake/profile.yaml",
        "--name",
        cluster,
        "--run-id",
        run_id,
        "--report-dir",
        str(report_dir),
        "--allow-disruptive",
        "--dra-skip-install",
        *extra,
    )


class NotYet(AssertionError):
    pass


def _poll(check: Any, timeout: float, interval: float = 1.0) -> Any:
    return retry(
        retry=retry_if_exception_type(NotYet),
        stop=stop_after_delay(timeout),
        wait=wait_fixed(interval),
        reraise=True,
    )(check)()


def _left(k8s: K8sClients, run_id: str) -> dict[str, list[str]]:
    """Everything on the cluster that is still the run's."""
    selector = f"{RUN_LABEL}={run_id}"
    rules = objects.ops_for(k8s, "DeviceTaintRule", RULE_VERSION).list(label_selector=selector)
    pcs = k8s.scheduling.list_priority_class(label_selector=selector)
    claims = k8s.resource.list_resource_claim_for_all_namespaces(label_selector=selector)
    cordoned = k8s.core.list_node(label_selector=f"{CORDONED_BY_LABEL}={run_id}")
    records = FakeDriverControl(k8s.core).read_records()
    return {
        "namespaces": [
            n.metadata.name for n in k8s.core.list_namespace(label_selector=selector).items
        ],
        "claims": [f"{c.metadata.namespace}/{c.metadata.name}" for c in claims.items],
        "DeviceTaintRules": [r.metadata.name for r in rules.items],
        "PriorityClasses": [p.metadata.name for p in pcs.items],
        "cordons": [n.metadata.name for n in cordoned.items],
        "faults": [key for key, run in records.items() if run == run_id],
    }


def _unschedulable_nodes(k8s: K8sClients) -> list[str]:
    """Nodes cordoned or still carrying the cordon's taint (the node controller lifts it)."""
    out = []
    for node in k8s.core.list_node().items:
        taints = [t.key for t in node.spec.taints or ()]
        if node.spec.unschedulable or UNSCHEDULABLE_TAINT in taints:
            out.append(node.metadata.name)
    return out


def _a_device(k8s: K8sClients, driver: str) -> DeviceRef:
    for item in k8s.resource.list_resource_slice(field_selector=f"spec.driver={driver}").items:
        if item.spec.node_name and item.spec.devices:
            return DeviceRef(
                driver, item.spec.pool.name, item.spec.devices[0].name, item.spec.node_name
            )
    raise AssertionError(f"no ResourceSlice of {driver} publishes a node-local device")


def _plant(k8s: K8sClients, run_id: str, driver: str) -> None:
    """What a test of the run leaves when killed mid-way: an injected fault (through the
    profile's plug-in, made with the run's FaultContext), a DeviceTaintRule, a PriorityClass."""
    context = FaultContext(
        kind=FaultKind.UNHEALTHY,
        driver=driver,
        run_id=run_id,
        timeout=60,
        api_client=k8s.api_client,
    )
    FakeDriverFaults(context).mark_unhealthy(_a_device(k8s, driver), "left by a killed run")
    build = Builders(run_id, "killed-test")
    suffix = secrets.token_hex(3)
    objects.create(
        k8s,
        build.device_taint_rule(
            f"killed-{suffix}",
            driver=driver,
            device="no-such-device",  # harmless to the cluster's next tests
            key="dra-conformance.io/killed",
            effect="None",
            api_version=RULE_VERSION,
        ),
    )
    objects.create(k8s, build.priority_class(f"killed-{suffix}", 10))


def test_killed_run_is_named_and_cleaned_up(
    kind_cluster: kind.KindCluster, fake_driver: Profile, k8s: K8sClients, tmp_path: Path
) -> None:
    run_id = f"killed-{secrets.token_hex(4)}"
    killed = subprocess.Popen(
        _run_cmd(
            kind_cluster.name, run_id, tmp_path / "killed", "--dra-requirement", "DRA-DRAIN-001"
        ),
        cwd=SUITE_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: SIGKILL reaches every process
    )
    try:

        def cordoned_with_claims() -> dict[str, list[str]]:
            if killed.poll() is not None:
                pytest.fail(f"the run ended (exit {killed.returncode}) before it cordoned")
            left = _left(k8s, run_id)
            if not (left["cordons"] and left["namespaces"] and left["claims"]):
                raise NotYet(f"the run has not cordoned a node with claims yet: {left}")
            return left

        _poll(cordoned_with_claims, timeout=240)
        _plant(k8s, run_id, fake_driver.driver)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(timeout=30)
    before = _left(k8s, run_id)
    assert all(before.values()), f"the killed run should have left one of each: {before}"

    # The next run names the leftovers and the command (its selection is empty: header only).
    header = subprocess.run(
        _run_cmd(
            kind_cluster.name,
            f"next-{secrets.token_hex(4)}",
            tmp_path / "next",
            "-k",
            "no_such_test",
        ),
        cwd=SUITE_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert f"dra-conformance cleanup --run-id {run_id}" in header.stdout, header.stdout[-3000:]
    assert "leftovers" in header.stdout
    assert _left(k8s, run_id) == before, "a run must not delete another run's objects"

    cleanup = subprocess.run(
        _cli("cleanup", "--run-id", run_id, "--name", kind_cluster.name),
        cwd=SUITE_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert "removed" in cleanup.stdout and "Namespace" in cleanup.stdout, cleanup.stdout
    assert "cordon" in cleanup.stdout and "fault" in cleanup.stdout, cleanup.stdout
    assert not any(_left(k8s, run_id).values()), _left(k8s, run_id)

    def uncordoned() -> None:
        if _unschedulable_nodes(k8s):
            raise NotYet(f"nodes still cordoned or tainted: {_unschedulable_nodes(k8s)}")

    _poll(uncordoned, timeout=60)

    again = subprocess.run(
        _cli("cleanup", "--run-id", run_id, "--name", kind_cluster.name),
        cwd=SUITE_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (again.returncode, f"run {run_id}: removed nothing") == (0, again.stdout.strip())
