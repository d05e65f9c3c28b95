"""DRA-CORE-002: the driver's ResourceSlices form consistent pools of uniquely named devices
with valid attribute and capacity names (unqualified ones are in the driver's domain), on
every node the profile names."""

from __future__ import annotations

import pytest

from conformance.kube import waits
from conformance.kube.client import K8sClients
from conformance.kube.slices import list_slices
from conformance.model.slice_checks import decided_slice_problems, slice_problems
from conformance.run.context import RunContext


@pytest.mark.dra_requirement("DRA-CORE-002")
# Cluster-wide: it reads every node's slices, which a node restart or deletion by another test
# (DRA-REBOOT-*, DRA-KUBELET-001, DRA-DRAIN-005) takes away for a while.
@pytest.mark.dra_devices("default", exclusive=True)
def test_published_slices_are_consistent_pools(dra_context: RunContext, k8s: K8sClients) -> None:
    profile = dra_context.profile
    minimum = profile.readiness.slices_per_node

    def problems(slices: list[dict]) -> list[str]:
        return slice_problems(slices, profile.driver, dra_context.nodes, minimum)

    def decided(slices: list[dict]) -> str | None:
        found = decided_slice_problems(slices, profile.driver)
        return "; ".join(found) if found else None

    # A driver may be between two writes of a republish, so missing slices and incomplete
    # pools get the converge window; what is wrong in the published content fails at once.
    waits.wait_until(
        lambda: list_slices(k8s, profile.driver),
        lambda slices: not problems(slices),
        describe=f"the ResourceSlices of {profile.driver} to be consistent pools of uniquely "
        "named devices with valid attribute and capacity names",
        timeout=dra_context.timeout("converge"),
        show=lambda slices: {
            "problems": problems(slices),
            "slices": sorted(s["metadata"]["name"] for s in slices),
        },
        abort=decided,
    )
