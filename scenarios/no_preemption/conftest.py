"""Fixtures of the no-preemption suite: PriorityClasses the test owns, and pods held by a
finalizer for inspection after their preemption."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator

import pytest
from preemption_checks import HeldPods, Priorities

from conformance.kube.builders import Builders
from conformance.kube.objects import ClusterObjects
from conformance.run.context import RunContext
from conformance.scenario_api.workloads import Workloads

LOW_PRIORITY = 1000
HIGH_PRIORITY = 1_000_000


@pytest.fixture
def priorities(
    cluster_objects: ClusterObjects, build: Builders, dra_context: RunContext
) -> Priorities:
    """A low and a high PriorityClass of this test (deleted after it)."""
    run_part = re.sub(r"[^a-z0-9]+", "-", dra_context.run_id.lower())[-12:].strip("-")
    tail = f"{run_part}-{secrets.token_hex(3)}".lstrip("-")
    names = Priorities(f"dra-conformance-low-{tail}", f"dra-conformance-high-{tail}")
    for name, value in ((names.low, LOW_PRIORITY), (names.high, HIGH_PRIORITY)):
        cluster_objects.create(
            build.priority_class(name, value, description="dra-conformance no-preemption test")
        )
    return names


@pytest.fixture
def held_pods(workload: Workloads) -> Iterator[HeldPods]:
    """Create pods carrying a finalizer of the test, so a preempted victim stays readable
    after its deletion; the finalizers are removed when the test ends, even on failure."""
    held = HeldPods(workload)
    try:
        yield held
    finally:
        held.release_all()
