"""DRA-DRAIN-005: deleting a Node object removes the ResourceSlices published for that node.

Destructive: the node is brought back afterwards (its kubelet restarted inside the kind node
container re-registers it; see conftest.NodeDeletion), so it only applies to kind clusters."""

from __future__ import annotations

import pytest

from conformance.kube import slices, waits
from conformance.model.outcome import not_run
from conformance.run.node_marks import wait_until_kubelet_restart_allowed
from conformance.scenario_api.placement import pick_node

# The longest mark known: DRA-EXT-006's device-plugin grace period (5 min and slack).
LONGEST_MARK_SECONDS = 360.0


@pytest.mark.dra_requirement("DRA-DRAIN-005")
@pytest.mark.dra_kubelet_errors("the node's kubelet restarts to register the Node again")
@pytest.mark.dra_node_exclusive(restarts_kubelet=True)  # deletes the Node
def test_deleting_a_node_removes_its_resource_slices(dra_context, k8s, node_deletion, device_lease):
    node = pick_node(dra_context, lease=device_lease)
    node_deletion.check_restorable(node)  # not run unless the node can be brought back
    # Restoring the node restarts its kubelet: respect the node's "no kubelet restart" mark.
    try:
        wait_until_kubelet_restart_allowed(
            device_lease.book, node, timeout=LONGEST_MARK_SECONDS * dra_context.timeout_scale
        )
    except TimeoutError as exc:
        not_run(str(exc), "run this requirement again once the mark has expired")
    driver = dra_context.profile.driver
    before = slices.slices_of_node(k8s, node)
    assert any(s["spec"]["driver"] == driver for s in before), (
        f"{driver} publishes no ResourceSlice for node {node}"
    )
    node_deletion.delete(node)
    waits.wait_until(
        lambda: slices.slices_of_node(k8s, node),
        lambda remaining: not remaining,
        describe=f"every ResourceSlice with spec.nodeName={node} to be deleted with its Node",
        timeout=dra_context.timeout("slicesPublished"),
        show=lambda remaining: [
            {
                "name": s["metadata"]["name"],
                "driver": s["spec"]["driver"],
                "ownerReferences": s["metadata"].get("ownerReferences"),
            }
            for s in remaining
        ],
    )
