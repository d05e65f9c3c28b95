"""What a run on a kind cluster the suite created measured of its control plane (the e2e
tests' shared check)."""

from __future__ import annotations

from typing import Any

from conformance.metrics.scrape import CLAIM_CONTROLLER

# kube-scheduler times its plugins in a random 10% of its scheduling cycles, and PreEnqueue in
# a random 10% of a pod's entries into its queue: with a cycle and an entry per pod, after this
# many pods with claims no DynamicResources row at all has a chance of 0.9 ** 66, about one in
# a thousand; after fewer the check would be a flake.
ENOUGH_SCHEDULED = 33


def prepared_pods(ops: dict[str, Any]) -> int:
    """The kubelets' NodePrepareResources calls: each one a pod the scheduler placed."""
    return sum(r["count"] for r in ops["grpc"] or () if r["method"] == "NodePrepareResources")


def assert_control_plane_figures(ops: dict[str, Any]) -> None:
    """On a kind cluster the suite created, both components are read: the scheduler's
    DynamicResources rows have figures (an extension point may be missing, being sampled, and
    all of them only after too few pods) and the claim controller's rows are there."""
    assert ops["unavailable"] == {}, ops["unavailable"]
    assert ops["sources"]["kube-scheduler"] == "read", ops["sources"]
    assert ops["sources"]["kube-controller-manager"] == "read", ops["sources"]
    scheduler = ops["scheduler"]
    assert scheduler is not None, ops["sources"]
    for row in scheduler:
        assert row["extension_point"] and row["count"] > 0 and row["mean_s"] is not None, row
    if prepared_pods(ops) >= ENOUGH_SCHEDULED:
        assert scheduler, f"{prepared_pods(ops)} pods scheduled, no DynamicResources row"
    claims = ops["claim_controller"]
    assert claims, "no resource-claim controller figure"
    assert all(r["metric"].startswith(CLAIM_CONTROLLER) for r in claims), claims
