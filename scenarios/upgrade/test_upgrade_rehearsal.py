"""DRA-UPG-001..005: an in-place Kubernetes upgrade of the cluster with live claims
(scenarios/upgrade/rehearsal.py runs it once; each test judges one requirement's evidence)."""

from __future__ import annotations

import pytest
from rehearsal import UPG_CLAIMS, UPG_EVICTED, UPG_KEEP, UPG_NEW_CLAIM, UPG_SLICES


@pytest.mark.dra_requirement(UPG_KEEP)
def test_pods_with_prepared_claims_keep_running_through_the_upgrade(rehearsal):
    rehearsal.judge(UPG_KEEP)


@pytest.mark.dra_requirement(UPG_CLAIMS)
def test_claims_stay_allocated_and_reserved_through_the_upgrade(rehearsal):
    rehearsal.judge(UPG_CLAIMS)


@pytest.mark.dra_requirement(UPG_SLICES)
def test_every_node_publishes_its_devices_after_each_step(rehearsal):
    rehearsal.judge(UPG_SLICES)


@pytest.mark.dra_requirement(UPG_NEW_CLAIM)
def test_the_plugin_serves_new_claims_on_each_upgraded_node(rehearsal):
    rehearsal.judge(UPG_NEW_CLAIM)


@pytest.mark.dra_requirement(UPG_EVICTED)
def test_evicted_pods_come_back_on_upgraded_nodes_with_devices(rehearsal):
    rehearsal.judge(UPG_EVICTED)
