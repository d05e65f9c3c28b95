"""Broken-driver checks for the requirements of the device_loss suite: each requirement's
scenario must FAIL against a fake driver that breaks it (the fixture switches the
misbehaviour on, runs the scenario in a subprocess on the same cluster, switches it off).

DeviceTaintRules are enforced by the control plane, not by the driver: what a driver can break
in DRA-LOSS-001 is the device the replacement pod actually gets (its CDI edits), and in
DRA-LOSS-002 whether the pods already using a device keep running (a driver that taints the
devices it prepared NoExecute gets them evicted).
"""

from __future__ import annotations

import pytest
from fakedriver.client.channel import FakeDriverControl

from conformance.kube.client import K8sClients
from conformance.kube.readiness import selected_nodes
from conformance.model.profile import Profile

pytestmark = pytest.mark.e2e


def test_loss_001_fails_when_the_replacement_sees_another_device(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-LOSS-001", ["cdi-wrong-device"])
    result.assert_requirement_failed("should see exactly")


def test_loss_002_fails_when_the_driver_evicts_the_pods_using_its_devices(
    run_scenario_against_broken_driver,
):
    # The driver taints the devices it prepared NoExecute itself, so the pod already using
    # the (rule-)tainted device does not keep running.
    result = run_scenario_against_broken_driver("DRA-LOSS-002", ["taint-prepared-devices"])
    result.assert_requirement_failed("user")


def test_loss_003_fails_when_a_withdrawn_device_stays_published(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-LOSS-003", ["keep-withdrawn-device"])
    result.assert_requirement_failed("ResourceSlices for")


def test_loss_006_fails_when_the_driver_loses_its_checkpoint_on_restart(
    run_scenario_against_broken_driver,
):
    # The restarted driver forgets what it prepared and cleans up the running claim's CDI
    # spec, so the running pod's container cannot start again.
    result = run_scenario_against_broken_driver("DRA-LOSS-006", ["lose-checkpoint-on-restart"])
    result.assert_requirement_failed("container main of pod survivor")


@pytest.mark.e2e_by_hand
def test_loss_006_fails_when_the_restarted_plugin_never_publishes_again(
    run_scenario_against_broken_driver,
):
    # The restarted plugin takes the slices its predecessor left for its own and writes none:
    # they look republished until the check deletes them, then the node's devices stay gone.
    # The working driver republishes within its 5 s resync; the wait for the broken one, and
    # the readiness wait after the test (the node has no slices while the misbehaviour is on),
    # need not be long.
    result = run_scenario_against_broken_driver(
        "DRA-LOSS-006",
        ["no-republish-after-restart"],
        timeouts={"slicesPublished": "20s", "driverReady": "45s"},
    )
    result.assert_requirement_failed("in new ResourceSlices after")


# SHOULDs, checked all the same: a driver that never reports recovery keeps the device Unhealthy
# in the pod status and its own health taint in the slice.
def test_loss_008_fails_when_a_recovered_device_stays_unhealthy(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-LOSS-008", ["sticky-unhealthy"])
    result.assert_requirement_failed("as Healthy again")


def test_loss_009_fails_when_the_health_taint_stays_after_recovery(
    run_scenario_against_broken_driver,
):
    result = run_scenario_against_broken_driver("DRA-LOSS-009", ["sticky-unhealthy"])
    result.assert_requirement_failed("to remove taint")


def test_loss_010_fails_when_the_driver_does_not_publish_its_taints(
    run_scenario_against_broken_driver,
):
    # The taint is acknowledged but never reaches spec.devices[].taints, so nothing keeps new
    # allocations off the device (DRA-LOSS-011 breaks the same way).
    result = run_scenario_against_broken_driver("DRA-LOSS-010", ["unpublished-taints"])
    result.assert_requirement_failed("the driver to publish taint")


def _health_streams(k8s: K8sClients, profile: Profile) -> dict[str, dict[str, int]]:
    """The health streams each plugin of the driver has open, by API version (its status)."""
    control = FakeDriverControl(k8s.core)
    return {
        node: (control.applied(node) or {}).get("healthStreams", {})
        for node in selected_nodes(k8s, profile)
    }


def test_loss_004_fails_when_the_health_service_is_not_advertised(
    run_scenario_against_broken_driver, k8s: K8sClients, fake_driver: Profile
):
    # Served but left out of GetInfo: the v1.37 kubelet registers the plugin again and opens
    # no health stream, so the device's health never reaches the pod.
    result = run_scenario_against_broken_driver("DRA-LOSS-004", ["health-not-advertised"])
    result.assert_requirement_failed("opens one only when the plugin's registration")
    assert all(not s for s in _health_streams(k8s, fake_driver).values()), (
        _health_streams(k8s, fake_driver),
        result.explain(),
    )


def test_a_probed_capability_is_observed_outside_the_verdict(
    run_scenario_against_broken_driver, fake_driver: Profile
):
    """A profile that does not declare health reporting or admin access, run with
    --dra-probe-capabilities against a driver whose health service is not advertised: both
    requirements run, neither decides, and the summary says admin access works and health
    reporting does not."""
    undeclared = ("health-reporting", "admin-access")
    result = run_scenario_against_broken_driver(
        "DRA-LOSS-004",
        ["health-not-advertised"],
        extra=["--dra-probe-capabilities", "--dra-requirement", "DRA-ALLOC-013"],
        fields={"capabilities": [c for c in fake_driver.capabilities if c not in undeclared]},
    )
    rows = {r["id"]: r for r in result.summary.get("requirements", [])}
    assert result.failed, result.explain()  # the probed test did fail...
    for req, observed in (("DRA-LOSS-004", "not working"), ("DRA-ALLOC-013", "working")):
        assert rows[req]["status"] == "not-applicable", result.explain()  # ...and decides nothing
        assert f"(probed: {observed}; outside the verdict)" in rows[req]["reason"]
    seen = result.summary["capabilities_seen"]
    assert seen["health-reporting"]["declared"] is False, seen
    assert seen["health-reporting"]["observed"] == "not working", seen
    assert (seen["admin-access"]["declared"], seen["admin-access"]["observed"]) == (
        False,
        "working",
    ), seen
    assert seen["device-taints"]["declared"] is True, seen
    assert result.verdict != "NON-CONFORMANT", result.explain()


@pytest.mark.e2e_by_hand  # a legal variant, past the CI budget: 87 s here (bench/suite.md)
def test_health_through_the_v1alpha1_api_reaches_the_pod(
    run_scenario_against_broken_driver, k8s: K8sClients, fake_driver: Profile
):
    # Legal: a plugin that advertises only the v1alpha1 health service (built before v1) gets
    # a v1alpha1 stream from the v1.37 kubelet; unhealthy and recovered reach the pod as well.
    result = run_scenario_against_broken_driver("DRA-LOSS-008", ["health-v1alpha1-only"])
    assert result.requirement_status == "passed" and not result.failed, result.explain()
    streams = _health_streams(k8s, fake_driver)
    assert streams and all(s == {"v1alpha1": 1} for s in streams.values()), streams
