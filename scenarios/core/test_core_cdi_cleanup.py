"""DRA-CORE-008: unprepare removes the claim's CDI spec from the node.

DRA-CORE-005 sees an unprepare through what it allows next (the device prepared for another
claim); a driver that lets go of the device but leaves the claim's CDI spec behind passes it,
and the node collects stale specs that the container runtime keeps loading. The spec files
are read on the node by a short-lived pod (conformance.scenario_api.cdi_specs)."""

from __future__ import annotations

import pytest

from conformance.model.outcome import not_applicable
from conformance.scenario_api.cdi_specs import CDI_SPEC_DIRS, cdi_specs_naming
from conformance.scenario_api.workloads import Workloads


@pytest.mark.dra_requirement("DRA-CORE-008")
@pytest.mark.dra_devices("default")
def test_unprepare_removes_the_claims_cdi_spec(workload: Workloads) -> None:
    workload.claim("claim")
    pod = workload.run("pod", ["claim"])
    node = pod["spec"]["nodeName"]
    uid = workload.read_claim("claim")["metadata"]["uid"]  # type: ignore[index]
    dirs = " or ".join(CDI_SPEC_DIRS)

    while_running = cdi_specs_naming(workload, uid, node, "cdi-while-running")
    if not while_running:
        not_applicable(
            f"no CDI spec file in {dirs} on node {node} names claim {workload.ref('claim')} "
            f"({uid}) while its pod runs: the driver does not pass devices through CDI spec "
            "files there"
        )

    # The kubelet completes the pod's deletion only after NodeUnprepareResources succeeded.
    workload.delete_pod("pod")
    workload.wait_deallocated("claim")
    left = cdi_specs_naming(workload, uid, node, "cdi-after-unprepare")
    assert not left, (
        f"claim {workload.ref('claim')} ({uid}) was unprepared (its pod deleted, the claim "
        f"deallocated), but CDI spec files on node {node} still name it: "
        f"{', '.join(map(str, left))}"
    )
