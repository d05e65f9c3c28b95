"""Claims and pods for scenarios, bound to one test namespace: create, wait, read what the
container sees. Scenario suites get a `Workloads` through the `workload` fixture
(scenarios/conftest.py); everything driver-specific comes from the profile.

The pure parts (requests for a device kind, a selector that pins one published device, the
comparison of what a container sees with what was allocated) are module functions, unit
tested without a cluster.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.kube import objects, state, waits
from conformance.kube.builders import Builders, PodClaim, request
from conformance.kube.client import K8sClients
from conformance.kube.state import AllocationResult
from conformance.model.cel import attribute_ref, cel_string, parse_simple_selector
from conformance.model.devices import PublishedDevice
from conformance.model.profile import Profile
from conformance.run.context import RunContext
from conformance.scenario_api import verification

HOSTNAME_LABEL = "kubernetes.io/hostname"
MAIN = "main"
PREPARE_FAILED = "FailedPrepareDynamicResources"  # the kubelet's event reason (v1.37.2)


# --- pure helpers ---------------------------------------------------------------------------


def kind_request(
    profile: Profile,
    kind: str = "default",
    name: str = "dev",
    *,
    selectors: Sequence[str] = (),
    count: int | None = None,
    all_devices: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """A request for devices of a profile device kind (`default`, a selector name,
    `class:<key>`): the kind's DeviceClass plus its selector, plus any extra `selectors`."""
    device_class, expression = profile.kind_class_and_expression(kind)
    return request(
        name,
        device_class,
        selectors=[*([expression] if expression else []), *selectors],
        count=count,
        all_devices=all_devices,
        **kwargs,
    )


def _cel_literal(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return cel_string(value)


def describing_selector(device: PublishedDevice) -> str | None:
    """A CEL conjunction of every (non-version) attribute of `device`; None if it has none."""
    terms = [
        f"{attribute_ref(name)} == {_cel_literal(value)}"
        for name, value in sorted(device.matchable_attributes().items())
    ]
    return " && ".join(terms) or None


def look_alikes(device: PublishedDevice, devices: Iterable[PublishedDevice]) -> list[str]:
    """Ids of the other devices on the same node (and pool) that `describing_selector(device)`
    would also match: CEL cannot name a device, only describe it."""
    mine = device.matchable_attributes()
    return sorted(
        d.id
        for d in devices
        if d.id != device.id
        and d.node == device.node
        and all(d.matchable_attributes().get(k) == v for k, v in mine.items())
    )


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


def selector_verdict(expression: str | None, device: PublishedDevice, driver: str) -> bool | None:
    """Whether a kind's selector is true for a published device: True/False when the harness
    can evaluate it (`==` conjunctions, conformance.model.cel), None when it cannot tell."""
    if expression is None:
        return True
    parsed = parse_simple_selector(expression)
    return None if parsed is None else parsed.matches(driver, device.matchable_attributes())


def node_selector_for(node: Mapping[str, Any]) -> dict[str, str]:
    """The `kubernetes.io/hostname` node selector of a Node object (the label, not the name:
    they differ on some clouds)."""
    meta = node.get("metadata") or {}
    return {HOSTNAME_LABEL: (meta.get("labels") or {}).get(HOSTNAME_LABEL) or meta["name"]}


def pod_ready(pod: Mapping[str, Any] | None) -> bool:
    """Phase Running and every container ready."""
    statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or ()
    return (
        state.pod_phase(pod) == "Running"
        and bool(statuses)
        and all(s.get("ready") for s in statuses)
    )


def restart_count(pod: Mapping[str, Any] | None, container: str = MAIN) -> int:
    for status in ((pod or {}).get("status") or {}).get("containerStatuses") or ():
        if status.get("name") == container:
            return int(status.get("restartCount") or 0)
    return 0


# --- the fixture's object -------------------------------------------------------------------


@dataclass
class Workloads:
    """Create claims and pods in one test namespace and observe them."""

    k8s: K8sClients
    build: Builders
    namespace: str
    context: RunContext
    request: Any = None  # the pytest FixtureRequest, for performance figures

    @property
    def profile(self) -> Profile:
        return self.context.profile

    def timeout(self, name: str) -> float:
        return self.context.timeout(name)

    # -- requests and claims ---------------------------------------------------------------

    def device_request(self, kind: str = "default", name: str = "dev", **kwargs: Any) -> dict:
        """See `kind_request`."""
        return kind_request(self.profile, kind, name, **kwargs)

    def claim(
        self,
        name: str,
        requests: Sequence[Mapping[str, Any]] | None = None,
        *,
        kind: str = "default",
        constraints: Sequence[Mapping[str, Any]] = (),
        config: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        """Create a ResourceClaim; without `requests`, one request `dev` for one device of
        `kind`."""
        body = self.build.resource_claim(
            name,
            self.namespace,
            requests if requests is not None else [self.device_request(kind)],
            constraints=constraints,
            config=config,
        )
        return objects.create(self.k8s, body)

    def template(
        self,
        name: str,
        requests: Sequence[Mapping[str, Any]] | None = None,
        *,
        kind: str = "default",
        constraints: Sequence[Mapping[str, Any]] = (),
        config: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        body = self.build.resource_claim_template(
            name,
            self.namespace,
            requests if requests is not None else [self.device_request(kind)],
            constraints=constraints,
            config=config,
        )
        return objects.create(self.k8s, body)

    # -- pods ------------------------------------------------------------------------------

    def pod(
        self,
        name: str,
        claims: Sequence[PodClaim | str] = (),
        *,
        node: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Create a workload pod. A plain string in `claims` is an existing claim of that name
        (pod claim entry of the same name). `node` pins the pod with a hostname node selector
        (the scheduler stays in the loop); `node_name=` bypasses it."""
        pod_claims = [c if isinstance(c, PodClaim) else PodClaim(c, claim=c) for c in claims]
        if node is not None:
            kwargs["node_selector"] = {
                **(kwargs.get("node_selector") or {}),
                **self.node_selector(node),
            }
        body = self.build.pod(
            name, self.namespace, image=self.context.workload_image, claims=pod_claims, **kwargs
        )
        return objects.create(self.k8s, body)

    def run(
        self,
        name: str,
        claims: Sequence[PodClaim | str] = (),
        *,
        abort_on_prepare_failure: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Create a pod and wait until it is Running with every container ready (see
        `wait_running` for `abort_on_prepare_failure`)."""
        started = time.monotonic()
        self.pod(name, claims, **kwargs)
        pod = self.wait_running(name, abort_on_prepare_failure=abort_on_prepare_failure)
        if self.request is not None:
            from conformance.report import record_metric

            record_metric(
                self.request,
                "pod_created_to_running",
                time.monotonic() - started,
                node=(pod.get("spec") or {}).get("nodeName") or "",
            )
        return pod

    def node_selector(self, node: str) -> dict[str, str]:
        return node_selector_for(self.k8s.to_dict(self.k8s.core.read_node(node)))

    def wait_running(
        self,
        name: str,
        *,
        timeout: float | None = None,
        abort_on_prepare_failure: bool = False,
    ) -> dict[str, Any]:
        """Running with all containers ready (the workload prints, then sleeps).

        `abort_on_prepare_failure` stops at the first FailedPrepareDynamicResources event,
        with the kubelet's message: for scenarios where any prepare error is the failure
        (the kubelet would otherwise retry until the timeout)."""

        def read() -> dict[str, Any]:
            pod = state.read_pod(self.k8s, self.namespace, name)
            failed = (
                self.warning_events(PREPARE_FAILED, "Pod", name)
                if abort_on_prepare_failure and not pod_ready(pod)
                else []
            )
            return {"pod": pod, "failed": failed}

        def abort(seen: dict[str, Any]) -> str | None:
            if seen["failed"]:
                return (
                    f"the kubelet could not prepare the pod's claims ({PREPARE_FAILED}): "
                    f"{seen['failed'][-1].get('message')}"
                )
            phase = state.pod_phase(seen["pod"])
            return f"the pod reached phase {phase}" if phase in ("Succeeded", "Failed") else None

        return waits.wait_until(
            read,
            lambda seen: pod_ready(seen["pod"]),
            describe=f"pod {self.namespace}/{name} to be Running with all containers ready",
            timeout=timeout or self.timeout("podRunning"),
            show=lambda seen: self._pod_with_warnings(name, seen["pod"]),
            abort=abort,
        )["pod"]

    def _pod_with_warnings(self, name: str, pod: dict[str, Any] | None) -> dict[str, Any]:
        """The pod's summary and its Warning events: why a pod is stuck is usually in the
        events (a kubelet error creating the container), not in the status."""
        try:
            warnings = [
                f"{e.get('reason')} (x{e.get('count') or 1}): {e.get('message')}"
                for e in self.events("Pod", name)
                if e.get("type") == "Warning"
            ]
        except Exception as exc:  # noqa: BLE001 - a diagnostic must not hide the timeout
            warnings = [f"events could not be read: {exc}"]
        summary = state.pod_summary(pod)
        return {
            "warning events": warnings[-5:],
            **(summary if isinstance(summary, dict) else {"pod": summary}),
        }

    def restart_container(self, pod: str, container: str = MAIN) -> dict[str, Any]:
        """Make the workload container exit (it restarts under restartPolicy Always) and wait
        until it runs again with a higher restartCount; returns the pod."""
        from conformance.kube.podexec import ask_workload_to_exit

        before = restart_count(self.read_pod(pod), container)
        ask_workload_to_exit(self.k8s, self.namespace, pod, container)
        return waits.wait_until(
            lambda: self.read_pod(pod),
            lambda p: restart_count(p, container) > before and pod_ready(p),
            describe=f"container {container} of pod {self.namespace}/{pod} to restart "
            f"(restartCount > {before}) and be ready again",
            timeout=self.timeout("podRunning"),
            show=state.pod_summary,
        )

    def delete_pod(self, name: str, *, wait: bool = True, grace_period: int | None = None) -> None:
        objects.delete(self.k8s, "Pod", name, self.namespace, grace_period_seconds=grace_period)
        if wait:
            waits.wait_for_deleted(
                lambda: state.read_pod(self.k8s, self.namespace, name),
                describe=f"pod {self.namespace}/{name}",
                timeout=self.timeout("podDeleted"),
            )

    def read_pod(self, name: str) -> dict[str, Any] | None:
        return state.read_pod(self.k8s, self.namespace, name)

    # -- claims: state -------------------------------------------------------------------------

    def read_claim(self, name: str) -> dict[str, Any] | None:
        return state.read_claim(self.k8s, self.namespace, name)

    def wait_allocated(self, name: str) -> dict[str, Any]:
        return waits.wait_for_claim_allocated(
            self.k8s, self.namespace, name, timeout=self.timeout("claimAllocated")
        )

    def wait_deallocated(self, name: str) -> dict[str, Any]:
        """status.allocation and status.reservedFor both cleared (the claim still exists)."""
        return waits.wait_until(
            lambda: self.read_claim(name),
            lambda c: (
                c is not None
                and not state.is_allocated(c)
                and not (c.get("status") or {}).get("reservedFor")
            ),
            describe=f"ResourceClaim {self.namespace}/{name} to be deallocated "
            "(status.allocation and status.reservedFor cleared)",
            timeout=self.timeout("podDeleted"),
            show=state.claim_summary,
        )

    def results(self, claim_name: str) -> list[AllocationResult]:
        claim = self.read_claim(claim_name)
        return state.allocation_results(claim) if claim else []

    def pod_claim_names(self, pod: Mapping[str, Any]) -> dict[str, str]:
        """pod claim entry name -> ResourceClaim name (generated ones from
        pod.status.resourceClaimStatuses)."""
        generated = {
            s["name"]: s.get("resourceClaimName")
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
        }
        out: dict[str, str] = {}
        for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
            name = entry.get("resourceClaimName") or generated.get(entry["name"])
            if name:
                out[entry["name"]] = name
        return out

    def live_devices(self) -> dict[str, PublishedDevice]:
        """The devices published right now, by `<pool>/<device>`."""
        from conformance.kube.slices import current_devices

        return {d.id: d for d in current_devices(self.k8s, self.profile.driver)}

    def assert_of_kind(self, kind: str, results: Iterable[AllocationResult]) -> None:
        """Each result is a device of `driver`, published now, for which the kind's selector
        is true in its published attributes (judged by the run's device set when the harness
        cannot evaluate the expression itself)."""
        _, expression = self.profile.kind_class_and_expression(kind)
        live = self.live_devices()
        known = self.context.device_sets.get(kind)
        for result in results:
            assert result.driver == self.profile.driver, f"{result} is not from the driver"
            device = live.get(result.device_id)
            assert device is not None, (
                f"allocated device {result.device_id} is not in any published ResourceSlice"
            )
            verdict = selector_verdict(expression, device, self.profile.driver)
            if verdict is None and known is not None:
                verdict = device.id in known
            assert verdict is not False, (
                f"allocated device {device.id} is not of kind {kind!r}: its selector "
                f"{expression!r} is false for its published attributes {dict(device.attributes)}"
            )

    # -- what the container sees ---------------------------------------------------------------

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

        output = waits.wait_until(
            read,
            lambda out: isinstance(out, state.WorkloadOutput),
            describe=f"the workload output of container {container} of pod "
            f"{self.namespace}/{pod}{' (previous instance)' if previous else ''}",
            timeout=self.timeout("settle"),
        )
        assert isinstance(output, state.WorkloadOutput)
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
        assert results, f"no allocation results to compare pod {pod} container {container} with"
        view = self.view(pod, results, container)
        assert view.exact, view.explain(f"container {container} of pod {self.namespace}/{pod}")
        return view

    # -- events --------------------------------------------------------------------------------

    def events(self, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        return state.events_for(self.k8s, self.namespace, kind=kind, name=name)

    def warning_events(self, reason: str, kind: str = "Pod", name: str | None = None) -> list:
        return [
            e
            for e in self.events(kind, name)
            if e.get("reason") == reason and e.get("type") == "Warning"
        ]
