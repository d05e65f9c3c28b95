"""Broken-driver checks: switch fake-driver misbehaviours on, run one requirement's scenario
tests in a pytest subprocess against the real cluster (broken_runs.py), and report how they
ended.

While a misbehaviour is on, the check holds an exclusive lease on the cluster's lease book, so
no other run against the same cluster sees the broken driver; the subprocess gets a private
lease book (the parent's exclusive lease would otherwise block it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from broken_runs import BrokenRun, run_scenarios
from fakedriver.client.channel import ALL_NODES, FakeDriverControl

from conformance.kube.client import K8sClients
from conformance.kube.readiness import selected_nodes
from conformance.model.profile import Profile
from conformance.run.cluster_lease_book import ClusterLeaseBook
from conformance.run.lease import DeviceLeaseBroker, LeaseRequest


@pytest.fixture
def run_scenario_against_broken_driver(
    fake_driver: Profile,
    kind_cluster: Any,
    k8s: K8sClients,
    tmp_path: Path,
    lease_book: ClusterLeaseBook,
) -> Iterator[Callable[..., BrokenRun]]:
    """`run(requirement_id, misbehaviours, node="*", extra=(), timeouts=None, fields=None)`
    -> BrokenRun (`timeouts`: profile timeouts for this run; `fields`: top-level profile fields
    set for it); misbehaviours are switched off again (and
    the driver confirmed it) before the fixture ends, also on failure."""
    control = FakeDriverControl(k8s.core)
    nodes = selected_nodes(k8s, fake_driver)
    broker = DeviceLeaseBroker(lease_book, {})
    switched: list[tuple[str, str]] = []
    leases: list[Any] = []

    def wait_all(target: str) -> None:
        for node in nodes if target == ALL_NODES else [target]:
            control.wait_applied(node, timeout=60)

    def run(
        requirement: str,
        misbehaviours: Sequence[str],
        node: str = ALL_NODES,
        extra: Sequence[str] = (),
        timeouts: Mapping[str, str] | None = None,
        fields: Mapping[str, Any] | None = None,
    ) -> BrokenRun:
        if not leases:
            leases.append(
                broker.acquire(
                    LeaseRequest(f"broken-driver-check {requirement}", [], exclusive=True),
                    timeout=1800,
                )
            )
        for name in misbehaviours:
            control.set_misbehaviour(name, True, node)
            switched.append((name, node))
        wait_all(node)
        result = run_scenarios(
            kind_cluster.name,
            fake_driver.source,
            requirement,
            tmp_path / f"run-{len(switched)}",
            extra,
            timeouts,
            fields,
        )
        result.misbehaviours = tuple(misbehaviours)
        return result

    try:
        yield run
    finally:
        try:
            for name, node in reversed(switched):
                control.set_misbehaviour(name, False, node)
            for node in dict.fromkeys(n for _, n in switched):
                wait_all(node)
        finally:
            for lease in leases:
                broker.release(lease)
