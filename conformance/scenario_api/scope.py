"""What every part of `Workloads` works in: the cluster, the builders, one test namespace and the
run (profile, timeouts, devices). The parts (`claims`, `pods`, `container_view`) are mixins of
this base; `workloads.Workloads` combines them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.kube.builders import Builders
from conformance.kube.client import K8sClients
from conformance.model.profile import Profile
from conformance.run.context import RunContext


@dataclass
class WorkloadScope:
    k8s: K8sClients
    build: Builders
    namespace: str
    context: RunContext
    request: Any = None  # the pytest FixtureRequest, for performance figures

    @property
    def profile(self) -> Profile:
        return self.context.profile

    @property
    def home_node(self) -> str | None:
        """The node this test's devices were leased on (its pods go there), if one."""
        return self.build.home.node if self.build.home else None

    def timeout(self, name: str) -> float:
        return self.context.timeout(name)

    def ref(self, name: str) -> str:
        """`<namespace>/<name>`, how a step title names an object of the test."""
        return f"{self.namespace}/{name}"
