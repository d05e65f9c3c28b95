"""Claims and pods for scenarios, bound to one test namespace: create, wait, read what the
container sees. Scenario suites get a `Workloads` through the `workload` fixture
(scenarios/conftest.py); everything driver-specific comes from the profile.

`Workloads` combines one mixin per concern, each a small module: `claims` (ResourceClaims and
templates), `pods` (workload pods and their events), `container_view` (what a container sees
against what it was allocated). Every action is an Allure step with the object's name, and the
claim after allocation, the pod when it runs (or fails to) and the ResourceSlices a check reads
are attached (conformance.observe.steps). The pure parts (requests for a device kind, a selector
that pins one published device, the comparison of what a container sees with what was
allocated) are module functions, unit tested without a cluster; this module re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.scenario_api.claims import ClaimOps
from conformance.scenario_api.container_view import ContainerView, View
from conformance.scenario_api.device_requests import (
    describing_selector,
    kind_request,
    look_alikes,
    selector_verdict,
)
from conformance.scenario_api.pods import (
    HOSTNAME_LABEL,
    MAIN,
    PodOps,
    node_selector_for,
    pod_ready,
    restart_count,
)
from conformance.scenario_api.running_wait import PREPARE_FAILED

__all__ = [
    "HOSTNAME_LABEL",
    "MAIN",
    "PREPARE_FAILED",
    "View",
    "Workloads",
    "describing_selector",
    "kind_request",
    "look_alikes",
    "node_selector_for",
    "pod_ready",
    "restart_count",
    "selector_verdict",
]


@dataclass
class Workloads(ClaimOps, PodOps, ContainerView):
    """Create claims and pods in one test namespace and observe them.

    Made with (k8s, build, namespace, context, request=None): see `scope.WorkloadScope`."""
