"""ResourceClaims (and templates) of a test: create, wait for allocation and release, read the
results, check them against the published devices. A mixin of `workloads.Workloads`; every
action is an Allure step (conformance.observe.steps)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from conformance.kube import objects, state, waits
from conformance.kube.state import AllocationResult
from conformance.model.devices import PublishedDevice, published_devices
from conformance.observe.steps import attach_yaml, step
from conformance.scenario_api.device_requests import kind_request
from conformance.scenario_api.kind_check import (
    allocated_against,
    allocated_device,
    kind_problem,
    node_device_ids,
)
from conformance.scenario_api.scope import WorkloadScope


class ClaimOps(WorkloadScope):
    # -- requests and claims ---------------------------------------------------------------

    def device_request(self, kind: str = "default", name: str = "dev", **kwargs: Any) -> dict:
        """See `device_requests.kind_request`."""
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
        with step(f"create claim {self.ref(name)}"):
            attach_yaml(f"ResourceClaim {name} (as created)", body)
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
        with step(f"create claim template {self.ref(name)}"):
            attach_yaml(f"ResourceClaimTemplate {name}", body)
            return objects.create(self.k8s, body)

    def delete_claim(self, name: str, *, wait: bool = False) -> None:
        """Delete the claim; with `wait`, until it is gone (finalizers included)."""
        with step(f"delete claim {self.ref(name)}", is_wait=wait):
            objects.delete(self.k8s, "ResourceClaim", name, self.namespace)
            if wait:
                waits.wait_for_deleted(
                    lambda: self.read_claim(name),
                    describe=f"ResourceClaim {self.ref(name)}",
                    timeout=self.timeout("podDeleted"),
                )

    # -- claims: state -----------------------------------------------------------------------

    def read_claim(self, name: str) -> dict[str, Any] | None:
        return state.read_claim(self.k8s, self.namespace, name)

    def wait_allocated(self, name: str) -> dict[str, Any]:
        with step(f"wait for allocation of claim {self.ref(name)}", is_wait=True):
            return waits.wait_for_claim_allocated(  # attaches the allocated claim
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
            describe=f"ResourceClaim {self.ref(name)} to be deallocated "
            "(status.allocation and status.reservedFor cleared)",
            timeout=self.timeout("podDeleted"),
            show=state.claim_summary,
        )

    def results(self, claim_name: str) -> list[AllocationResult]:
        """The claim's allocation results (attached to the report as the claim's YAML)."""
        claim = self.read_claim(claim_name)
        if claim is not None and state.is_allocated(claim):
            attach_yaml(f"ResourceClaim {claim_name} (allocated)", claim)
        return state.allocation_results(claim) if claim else []

    def pod_claim_names(self, pod: Mapping[str, Any]) -> dict[str, str]:
        """pod claim entry name -> ResourceClaim name (see `running_wait.pod_claim_names`)."""
        from conformance.scenario_api.running_wait import pod_claim_names

        return pod_claim_names(pod)

    def live_devices(self) -> dict[str, PublishedDevice]:
        """The devices published right now, by `<pool>/<device>` (the ResourceSlices read are
        attached to the report)."""
        from conformance.kube.slices import list_slices

        slices = list_slices(self.k8s, self.profile.driver)
        attach_yaml(f"ResourceSlices of {self.profile.driver}", slices)
        return {d.id: d for d in published_devices(slices, self.profile.driver)}

    def node_device_ids(self, node: str) -> frozenset[str]:
        """The ids of `node`'s devices, published now or at the run's start
        (`kind_check.node_device_ids`): what a device a pod got there is checked against."""
        return node_device_ids(self.live_devices(), self.context.devices, node)

    def devices_allocated_against(
        self, allocated: Iterable[AllocationResult] | None = None
    ) -> dict[str, PublishedDevice]:
        """The devices by id as published now, and those withdrawn since the run started as
        they were then (of those, only the `allocated` ones when given; see
        `kind_check.allocated_against`): what an allocated device is checked against."""
        ids = None if allocated is None else {r.device_id for r in allocated}
        return allocated_against(self.live_devices(), self.context.devices, ids)

    def assert_of_kind(self, kind: str, results: Iterable[AllocationResult]) -> None:
        """Each result is a device of `driver`, published now or at the run's start, that the
        kind's selector selects in its published attributes and capacity, as the scheduler
        evaluates it."""
        _, expression = self.profile.kind_class_and_expression(kind)
        results = list(results)
        with step(f"check that {[r.device_id for r in results]} are devices of kind {kind!r}"):
            devices = self.devices_allocated_against()
            for result in results:
                assert result.driver == self.profile.driver, f"{result} is not from the driver"
                device = allocated_device(result.device_id, devices, self.profile.driver)
                problem = kind_problem(kind, expression, device, self.profile.driver)
                assert problem is None, problem
