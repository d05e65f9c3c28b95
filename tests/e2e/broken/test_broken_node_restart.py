"""Broken-driver checks for the MUST requirements of the node_restart suite (see
test_broken_device_loss.py for how they run).

`register-once`: the plugin answers the kubelet's GetInfo only until it was registered once,
so nothing changes until the kubelet restarts; the restarted kubelet can then never register
it, and the new claim on the node is never prepared ("DRA driver ... is not registered").
A restart command that restarts nothing is the harness's fault: the kubelet's process start
time proves each restart, and the requirement ends an error, never a verdict on the driver.
`cdi-not-recreated`: after a node restart the driver does not write the CDI specs that the
restart removed, so the pods that ran there cannot start again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fakedriver.client.channel import ALL_NODES, FakeDriverControl

from conformance.kube.client import K8sClients
from conformance.kube.daemonsets import wait_driver_ready
from conformance.kube.readiness import selected_nodes
from conformance.model.profile import Profile
from conformance.node_access.kind import KindNodeContainers
from conformance.run.cluster_lease_book import ClusterLeaseBook
from conformance.run.node_marks import wait_until_kubelet_restart_allowed

pytestmark = pytest.mark.e2e

# DRA-EXT-006's mark may still be on a node of this cluster (5 min and slack).
LONGEST_MARK_SECONDS = 360.0


@pytest.fixture
def run_then_reregister(
    run_scenario_against_broken_driver: Callable[..., Any],
    fake_driver: Profile,
    kind_cluster: Any,
    k8s: K8sClients,
    lease_book: ClusterLeaseBook,
) -> Iterator[Callable[..., Any]]:
    """`run_scenario_against_broken_driver`, and afterwards (still under its exclusive lease):
    `register-once` off, every driver node's kubelet restarted so it registers the plugin at
    once (a kubelet that gave up retries only after its back-off, up to about 2 minutes), and
    the driver ready again."""
    yield run_scenario_against_broken_driver
    control = FakeDriverControl(k8s.core)
    containers = KindNodeContainers(kind_cluster.name, {n: n for n in kind_cluster.nodes()})
    control.set_misbehaviour("register-once", False, ALL_NODES)
    for node in selected_nodes(k8s, fake_driver):
        control.wait_applied(node, timeout=60)
        wait_until_kubelet_restart_allowed(lease_book, node, timeout=LONGEST_MARK_SECONDS)
        containers.restart_kubelet(node)
    wait_driver_ready(k8s, fake_driver, timeout=300)


def test_kubelet_001_fails_when_the_plugin_does_not_register_with_a_restarted_kubelet(
    run_then_reregister,
):
    result = run_then_reregister("DRA-KUBELET-001", ["register-once"])
    result.assert_requirement_failed("is not registered")


def test_reboot_001_fails_when_the_driver_does_not_recreate_cdi_specs(
    run_scenario_against_broken_driver,
):
    """`cdi-not-recreated`: after the restart emptied /run the driver answers the kubelet's
    prepare from its checkpoint without writing the claim's CDI spec again, so the container
    runtime cannot resolve the CDI device and the pod's containers never start."""
    result = run_scenario_against_broken_driver("DRA-REBOOT-001", ["cdi-not-recreated"])
    result.assert_requirement_failed("cannot start after the node restart")


def test_kubelet_001_is_the_harness_s_error_when_the_restart_command_restarts_nothing(
    run_scenario_against_broken_driver,
):
    """A `restartKubelet` that returns 0 and restarts nothing: the honest driver republishes
    nothing it needs to, so only the kubelet's unchanged start time can tell."""
    result = run_scenario_against_broken_driver(
        "DRA-KUBELET-001",
        [],
        fields={"nodeCommands": {"restartKubelet": ["true"]}},
        timeouts={"driverReady": "20s"},
    )
    assert result.requirement_status == "error", result.explain()
    assert result.harness_error, result.explain()
    assert "did not restart" in result.output and "not of the driver" in result.output, (
        result.explain()
    )
