"""DRA-DRAIN-005: deleting a Node object removes the ResourceSlices published for that node.

Destructive: the node is brought back afterwards (its kubelet restarted inside the kind node
container re-registers it; see conftest.NodeDeletion), so it only applies to kind clusters."""

from __future__ import annotations

import pytest

from conformance.kube import slices, waits
from conformance.placement import pick_node


@pytest.mark.requirement("DRA-DRAIN-005")
@pytest.mark.devices("default", count="all", exclusive=True)
def test_deleting_a_node_removes_its_resource_slices(dra_context, k8s, node_deletion):
    node = pick_node(dra_context)
    node_deletion.container(node)  # not applicable unless the node can be brought back
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
