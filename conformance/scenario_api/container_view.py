"""What a container sees (its printed environment, file or command output, per the profile's
verification) compared with what its claims were allocated. A mixin of `workloads.Workloads`;
reading and comparing are Allure steps, with what was read attached."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from conformance.kube import state, waits
from conformance.kube.state import AllocationResult
from conformance.observe.steps import attach_yaml, step
from conformance.scenario_api import verification
from conformance.scenario_api.pods import MAIN
from conformance.scenario_api.scope import WorkloadScope


@dataclass(frozen=True)
class View:
    """What a container sees compared with what its claims were allocated."""

    expected: frozenset[str]
    seen: frozenset[str]

    @property
    def missing(self) -> frozenset[str]:
        return self.expected - self.seen

    @property
    def foreign(self) -> frozenset[str]:
        return self.seen - self.expected

    @property
    def exact(self) -> bool:
        return self.expected == self.seen

    def explain(self, who: str) -> str:
        parts = [f"{who} should see exactly {sorted(self.expected)}, but sees {sorted(self.seen)}"]
        if self.missing:
            parts.append(f"missing: {sorted(self.missing)}")
        if self.foreign:
            parts.append(f"not allocated to it: {sorted(self.foreign)}")
        return "; ".join(parts)


class ContainerView(WorkloadScope):
    def output(
        self, pod: str, container: str = MAIN, *, previous: bool = False
    ) -> state.WorkloadOutput:
        """What the workload printed (environment, the profile's file or command output);
        waits briefly for a just-started container to finish printing."""

        def read() -> state.WorkloadOutput | str:
            try:
                return state.pod_workload_output(
                    self.k8s, self.namespace, pod, container, previous=previous
                )
            except ValueError as exc:  # no complete block yet
                return str(exc)

        instance = " (previous instance)" if previous else ""
        with step(
            f"read what container {container} of pod {self.ref(pod)} sees{instance}",
            is_wait=True,  # the wait for its output is this step
        ):
            output = waits.wait_until(
                read,
                lambda out: isinstance(out, state.WorkloadOutput),
                describe=f"the workload output of container {container} of pod "
                f"{self.ref(pod)}{instance}",
                timeout=self.timeout("converge"),
            )
            assert isinstance(output, state.WorkloadOutput)
            printed = output
            attach_yaml(
                f"what container {container} of pod {pod} printed",
                lambda: {
                    "env": dict(printed.env),
                    "file": printed.file,
                    "command": printed.command,
                },
            )
            return output

    def seen(self, pod: str, container: str = MAIN, *, previous: bool = False) -> frozenset[str]:
        """The device identifiers the container reports (profile verification)."""
        output = self.output(pod, container, previous=previous)
        return frozenset(verification.observed_identifiers(self.profile.verification, output))

    def expected(self, results: Iterable[AllocationResult]) -> frozenset[str]:
        devices = {d.id: d for d in self.context.devices}
        return frozenset(
            verification.expected_identifiers(self.profile.verification, results, devices)
        )

    def view(self, pod: str, results: Iterable[AllocationResult], container: str = MAIN) -> View:
        return View(expected=self.expected(results), seen=self.seen(pod, container))

    def assert_sees_exactly(
        self, pod: str, results: Iterable[AllocationResult], container: str = MAIN
    ) -> View:
        """The container sees exactly the devices of `results`: all of them and no other."""
        results = list(results)
        devices = sorted(r.device_id for r in results)
        with step(
            f"check that container {container} of pod {self.ref(pod)} sees exactly {devices}"
        ):
            assert results, f"no allocation results to compare pod {pod} container {container} with"
            view = self.view(pod, results, container)
            assert view.exact, view.explain(f"container {container} of pod {self.ref(pod)}")
            return view

    def assert_sees_within(
        self,
        pod: str,
        results: Iterable[AllocationResult],
        allowed: Iterable[AllocationResult],
        container: str = MAIN,
    ) -> View:
        """The container sees every device of `results`, and none but those of `allowed`
        (the devices of the whole pod, for a device every container of the pod shares)."""
        results, allowed = list(results), list(allowed)
        devices = sorted(r.device_id for r in results)
        with step(
            f"check that container {container} of pod {self.ref(pod)} sees {devices}, and no "
            "device the pod was not allocated"
        ):
            assert results, f"no allocation results to compare pod {pod} container {container} with"
            view = View(expected=self.expected(results), seen=self.seen(pod, container))
            outside = view.seen - self.expected(allowed)
            who = f"container {container} of pod {self.ref(pod)}"
            assert not view.missing and not outside, (
                f"{who} should see {sorted(view.expected)} and no device outside its pod's "
                f"claims {sorted(self.expected(allowed))}, but sees {sorted(view.seen)}"
            )
            return view
