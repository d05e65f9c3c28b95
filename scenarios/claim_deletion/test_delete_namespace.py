"""DRA-DEL-005: deleting a namespace removes all its claims and frees all their devices."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from deletion_checks import single_result, uid

from conformance.kube import state, waits
from conformance.kube.builders import Builders, PodClaim
from conformance.kube.cleanup import NamespaceRegistry, create_test_namespace, delete_namespace
from conformance.kube.client import K8sClients
from conformance.model.naming import namespace_name
from conformance.run.context import RunContext
from conformance.scenario_api.device_reuse import ReuseProbe
from conformance.scenario_api.workloads import Workloads


@pytest.fixture
def doomed(
    request: pytest.FixtureRequest,
    dra_context: RunContext,
    k8s: K8sClients,
    build: Builders,
    device_lease: object,
) -> Iterator[Workloads]:
    """A second namespace of this test, the one the test deletes (deleted here too if the
    test failed before it could)."""
    registry = NamespaceRegistry(dra_context.harness_dir / "namespaces")
    name = namespace_name(dra_context.run_id, request.node.nodeid + "-doomed")
    create_test_namespace(k8s, build, registry, name, request.node.nodeid)
    try:
        yield Workloads(k8s, build, name, dra_context, request)
    finally:
        delete_namespace(k8s, registry, name, timeout=dra_context.timeout("namespaceDeleted"))


@pytest.mark.dra_requirement("DRA-DEL-005")
@pytest.mark.dra_devices("default", count=2, guard=True)  # the reuse probes' devices
def test_namespace_deletion_removes_claims_and_frees_devices(
    workload: Workloads, doomed: Workloads, k8s: K8sClients
) -> None:
    doomed.claim("standalone")
    doomed.template("per-pod")
    doomed.run("plain", ["standalone"])
    generated_pod = doomed.run("templated", [PodClaim("dev", template="per-pod")])
    claim_names = ["standalone", doomed.pod_claim_names(generated_pod)["dev"]]
    devices = [single_result(doomed, n).device_id for n in claim_names]
    released = {uid(doomed.read_claim(n)) for n in claim_names}
    probes = ReuseProbe.start_each(workload, devices)
    for probe in probes:
        probe.assert_blocked()

    k8s.core.delete_namespace(doomed.namespace)
    waits.wait_for_deleted(
        lambda: state.read_namespace(k8s, doomed.namespace),
        describe=f"namespace {doomed.namespace} with allocated claims",
        timeout=workload.timeout("namespaceDeleted"),
    )
    left = k8s.resource.list_namespaced_resource_claim(doomed.namespace).items
    assert not left, f"claims left in deleted namespace: {[c.metadata.name for c in left]}"
    for probe in probes:
        probe.wait_reallocated(released_uids=released)
