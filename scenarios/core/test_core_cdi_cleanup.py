"""DRA-CORE-008: unprepare removes the claim's CDI spec from the node.

DRA-CORE-005 sees an unprepare through what it allows next (the device prepared for another
claim); a driver that lets go of the device but leaves the claim's CDI spec behind passes it,
and the node collects stale specs that the container runtime keeps loading. The claim's specs
are found as the runtime finds them: by the CDI device ids the kubelet got for the claim (its
DRA checkpoint), in the runtime's spec directories; or by the claim's UID in a spec's name or
contents (conformance.model.cdi_lookup). The node is read by a short-lived pod before the
claim is prepared, while its pod runs and after it was unprepared
(cdi_specs_checks)."""

from __future__ import annotations

import pytest
from cdi_specs_checks import read_node_cdi

from conformance.model.cdi_lookup import claim_cdi_ids, claim_specs, static_specs
from conformance.model.outcome import not_applicable, not_run
from conformance.scenario_api.workloads import Workloads


@pytest.mark.dra_requirement("DRA-CORE-008")
@pytest.mark.dra_devices("default")
def test_unprepare_removes_the_claims_cdi_spec(workload: Workloads) -> None:
    node = workload.home_node
    assert node is not None, "the test's device lease names no node (dra_devices pins one)"
    before = read_node_cdi(workload, node, "cdi-before")
    workload.claim("claim")
    pod = workload.run("pod", ["claim"])
    assert pod["spec"]["nodeName"] == node, pod["spec"]["nodeName"]
    uid = workload.read_claim("claim")["metadata"]["uid"]  # type: ignore[index]
    claim = f"claim {workload.ref('claim')} ({uid})"
    paths = workload.profile.cdi
    dirs = " or ".join(paths.spec_dirs)
    checkpoint = f"{paths.kubelet_root_dir}/dra_manager_state"

    running = read_node_cdi(workload, node, "cdi-while-running")
    ids = claim_cdi_ids(running.checkpoint, uid) if running.checkpoint is not None else None
    specs = claim_specs(running, uid, ids or (), before)
    if not specs:
        where = f"no CDI spec file in {dirs} on node {node} names {claim}"
        if ids is None:
            not_run(
                f"{where}, and the kubelet's DRA checkpoint {checkpoint} "
                f"{'is missing' if running.checkpoint is None else 'could not be parsed'}, so "
                "the CDI devices the kubelet passed the runtime are unknown",
                "set cdi.kubeletRootDir in the profile to the kubelet's --root-dir",
            )
        if not ids:
            not_applicable(
                f"{where}, and the kubelet passed no CDI device of it to the container runtime "
                f"(its checkpoint {checkpoint} lists none): the driver does not use CDI"
            )
        if static := static_specs(running, ids, before):
            not_applicable(
                f"the CDI devices of {claim} ({', '.join(ids)}) are defined only by spec files "
                f"that were there, unchanged, before the claim was prepared ({', '.join(static)}):"
                " the driver's static specs, nothing for unprepare to remove"
            )
        not_run(
            f"the CDI devices the kubelet passed for {claim} ({', '.join(ids)}, from {checkpoint})"
            f" are defined by no spec file in {dirs} on node {node}: the container runtime reads"
            " its specs elsewhere",
            "list the runtime's CDI spec directories in the profile (cdi.specDirs)",
        )

    # The kubelet completes the pod's deletion only after NodeUnprepareResources succeeded.
    workload.delete_pod("pod")
    workload.wait_deallocated("claim")
    left = claim_specs(read_node_cdi(workload, node, "cdi-after-unprepare"), uid, ids or (), before)
    assert not left, (
        f"{claim} was unprepared (its pod deleted, the claim deallocated), but its CDI spec "
        f"files on node {node} are still there: {'; '.join(map(str, left))}"
    )
