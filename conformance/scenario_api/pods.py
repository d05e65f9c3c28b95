"""Workload pods of a test: create, run until ready, restart a container, delete, read their
events. A mixin of `workloads.Workloads`; every action is an Allure step, and a pod that runs
(or fails to) is attached to the report as YAML (conformance.observe.steps)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conformance.kube import harness_causes, objects, state, waits
from conformance.kube.builders import PodClaim
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.model.outcome import HarnessError
from conformance.observe.steps import attach_yaml, step
from conformance.scenario_api.placement import PlacementError
from conformance.scenario_api.prepare_retry import RETRY_ANNOTATION, PrepareRetry
from conformance.scenario_api.running_wait import (
    PoolWatch,
    claim_pools,
    hopeless_reason,
    pod_claim_names,
    prepare_failures,
    published_pools,
)
from conformance.scenario_api.scope import WorkloadScope

HOSTNAME_LABEL = "kubernetes.io/hostname"
MAIN = "main"


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


# Waiting reasons of a container that will not start however long one waits (the kubelet's
# CreateContainerError covers a CDI device the runtime cannot resolve).
CANNOT_START = ("CreateContainerError", "CreateContainerConfigError", "RunContainerError")


def cannot_start(pod: Mapping[str, Any] | None, container: str = MAIN) -> str | None:
    """Why `container` of `pod` cannot start, or None."""
    for status in ((pod or {}).get("status") or {}).get("containerStatuses") or ():
        waiting = (status.get("state") or {}).get("waiting") or {}
        if status.get("name") == container and waiting.get("reason") in CANNOT_START:
            name = (pod or {}).get("metadata", {}).get("name")
            return (
                f"container {container} of pod {name} cannot start: "
                f"{waiting.get('reason')}: {waiting.get('message')}"
            )
    return None


def _claims_text(claims: Sequence[PodClaim]) -> str:
    names = [c.claim or f"{c.name} from template {c.template}" for c in claims]
    return f" with claims {', '.join(names)}" if claims else ""


class PodOps(WorkloadScope):
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
        home = self.build.home
        elsewhere = {node, kwargs.get("node_name")} - {None, home.node if home else None}
        if home is not None and elsewhere:
            # Its devices were leased on `home` only: elsewhere, another test may own the node.
            raise PlacementError(
                f"pod {self.ref(name)}: the test's devices are leased on node {home.node}, not "
                f"{', '.join(sorted(elsewhere))}; mark it @pytest.mark.dra_devices(..., "
                "across_nodes=True) if its pods must span nodes"
            )
        node = node or (home.node if home and not kwargs.get("node_name") else None)
        on = f" on node {node}" if node else ""
        with step(f"create pod {self.ref(name)}{_claims_text(pod_claims)}{on}"):
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
        abort_on_prepare_failure: bool = True,
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
        abort_on_prepare_failure: bool = True,
    ) -> dict[str, Any]:
        """Running with all containers ready (the workload prints, then sleeps).

        A failure that waiting cannot change ends the wait at once with its reason
        (`running_wait`): a FailedPrepareDynamicResources event for the pod, with the
        kubelet's message, or a claim's pool gone from the ResourceSlices. A container that
        cannot get its image ends it at once as a `HarnessError`, and so does a timeout on
        FailedCreatePodSandBox warnings (`kube.harness_causes`): not the driver's failure.

        Scenarios that expect a passing prepare failure (a fault they clear, a driver or
        kubelet coming back) pass `abort_on_prepare_failure=False`: the kubelet is then asked
        to retry a failed prepare every 10 s instead of at its next resync (`prepare_retry`);
        a pod that finished still ends the wait."""
        pools = PoolWatch()
        read_pod = (
            (lambda: self.read_pod(name))
            if abort_on_prepare_failure
            else self.reader_retrying_prepare(name)
        )

        def read() -> dict[str, Any]:
            pod = read_pod()
            seen: dict[str, Any] = {"pod": pod, "failed": [], "pools_gone": None}
            if abort_on_prepare_failure and pod is not None and not pod_ready(pod):
                uid = (pod.get("metadata") or {}).get("uid")
                seen["failed"] = prepare_failures(self.events("Pod", name), uid)
                if (pod.get("spec") or {}).get("nodeName"):
                    seen["pools_gone"] = self._pools_gone(pod, pools)
            return seen

        def abort(seen: dict[str, Any]) -> str | None:
            harness_causes.raise_if_pull_failure(seen["pod"])  # the harness's error, at once
            return hopeless_reason(seen["pod"], seen["failed"], seen["pools_gone"])

        with step(f"wait for pod {self.ref(name)} Running", is_wait=True):
            try:
                pod = waits.wait_until(
                    read,
                    lambda seen: pod_ready(seen["pod"]),
                    describe=f"pod {self.ref(name)} to be Running with all containers ready",
                    timeout=timeout or self.timeout("podRunning"),
                    show=lambda seen: self._pod_with_warnings(name, seen["pod"]),
                    abort=abort,
                )["pod"]
            except (AssertionError, HarnessError) as exc:
                attach_yaml(f"Pod {name} (not running)", lambda: self.read_pod(name))
                if isinstance(exc, waits.WaitTimeout):
                    self._raise_if_sandbox_failed(name, exc)
                raise
            attach_yaml(f"Pod {name} (running)", pod)
            return pod

    def _raise_if_sandbox_failed(self, name: str, timeout: waits.WaitTimeout) -> None:
        """A pod that timed out without a container ever started, on FailedCreatePodSandBox
        warnings: the runtime's (the cluster's) problem, an error rather than a failure,
        unless the driver's NRI plugin refused the sandbox (a failure)."""
        cause = harness_causes.sandbox_failure(self.read_pod(name), self.events("Pod", name))
        if cause and cause.by_driver:
            raise AssertionError(f"{cause}\n{timeout}") from timeout
        if cause:
            raise HarnessError(f"{cause}: {harness_causes.NOT_THE_DRIVER}\n{timeout}") from timeout

    def _pools_gone(self, pod: dict[str, Any], watch: PoolWatch) -> str | None:
        """The watch's verdict on the pools the pod's allocated claims come from."""
        from conformance.kube.slices import list_slices

        claims = {
            claim: state.read_claim(self.k8s, self.namespace, claim)
            for claim in pod_claim_names(pod).values()
        }
        allocated = claim_pools(claims)
        drivers = sorted({p.driver for pools in allocated.values() for p in pools})
        published = published_pools(s for d in drivers for s in list_slices(self.k8s, d))
        return watch.observe(allocated, published)

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
        until it runs again with a higher restartCount; returns the pod. Stops early when the
        container cannot start (its devices' CDI specs are gone, for one)."""
        from conformance.kube.podexec import ask_workload_to_exit

        with step(f"restart container {container} of pod {self.ref(pod)}"):
            before = restart_count(self.read_pod(pod), container)
            ask_workload_to_exit(self.k8s, self.namespace, pod, container)
            return waits.wait_until(
                lambda: self.read_pod(pod),
                lambda p: restart_count(p, container) > before and pod_ready(p),
                describe=f"container {container} of pod {self.ref(pod)} to restart "
                f"(restartCount > {before}) and be ready again",
                timeout=self.timeout("podRunning"),
                show=state.pod_summary,
                abort=lambda p: cannot_start(p, container),
            )

    def delete_pod(self, name: str, *, wait: bool = True, grace_period: int | None = None) -> None:
        grace = "" if grace_period is None else f" (grace period {grace_period}s)"
        with step(f"delete pod {self.ref(name)}{grace}", is_wait=wait):
            objects.delete(self.k8s, "Pod", name, self.namespace, grace_period_seconds=grace_period)
            if wait:
                waits.wait_for_deleted(
                    lambda: state.read_pod(self.k8s, self.namespace, name),
                    describe=f"pod {self.ref(name)}",
                    timeout=self.timeout("podDeleted"),
                )

    def read_pod(self, name: str) -> dict[str, Any] | None:
        return state.read_pod(self.k8s, self.namespace, name)

    def touch_pod(self, name: str, attempt: int) -> None:
        """Change an annotation of the pod: the kubelet syncs an updated pod at once, and so
        retries a prepare that failed (`prepare_retry`). The value carries the time, so it
        differs from whatever an earlier touch wrote."""
        with step(f"touch pod {self.ref(name)} so the kubelet retries its prepare (#{attempt})"):
            value = f"#{attempt} at {time.time():.3f}"
            self.k8s.core.patch_namespaced_pod(
                name,
                self.namespace,
                {"metadata": {"annotations": {RETRY_ANNOTATION: value}}},
                field_manager=FIELD_MANAGER,
            )

    def reader_retrying_prepare(self, name: str) -> Callable[[], dict[str, Any] | None]:
        """A read of pod `name` for a wait that expects a passing prepare failure: while the
        pod is on a node, not ready and has FailedPrepareDynamicResources events, each read
        also has the kubelet retry the prepare now if 10 s went by since the last retry
        (`prepare_retry`), rather than at its resync 60-90 s later."""
        retry = PrepareRetry(lambda attempt: self.touch_pod(name, attempt))

        def read() -> dict[str, Any] | None:
            pod = self.read_pod(name)
            if pod is None or pod_ready(pod) or not (pod.get("spec") or {}).get("nodeName"):
                return pod
            uid = (pod.get("metadata") or {}).get("uid")
            retry.observe(prepare_failures(self.events("Pod", name), uid))
            return pod

        return read

    # -- events --------------------------------------------------------------------------------

    def events(self, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        return state.events_for(self.k8s, self.namespace, kind=kind, name=name)

    def warning_events(self, reason: str, kind: str = "Pod", name: str | None = None) -> list:
        return [
            e
            for e in self.events(kind, name)
            if e.get("reason") == reason and e.get("type") == "Warning"
        ]
