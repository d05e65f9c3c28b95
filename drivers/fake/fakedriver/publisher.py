"""Publish a PoolPlan as ResourceSlices, bumping the pool generation on change.

The slices of this driver on this node are listed with field selectors
``spec.nodeName`` and ``spec.driver``. A content hash annotation tells whether
the published pool already matches the plan, so the periodic resync does not
bump the generation; any change (or a slice deleted behind our back, e.g. by
the kubelet's cleanup) republishes every slice with generation + 1, then
deletes stale slices. Slices are owned by the Node object, so deleting the
node garbage-collects them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from fakedriver.kubeapi import ApiError, KubeRest
from fakedriver.slices import PoolPlan

log = logging.getLogger(__name__)

API_VERSION = "resource.k8s.io/v1"
SLICES_PATH = "/apis/resource.k8s.io/v1/resourceslices"
HASH_ANNOTATION = "fake.dra-conformance.io/pool-content-hash"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "fake-dra-kubelet-plugin"


class SliceClient(Protocol):
    def list_slices(self, node_name: str, driver: str) -> list[dict[str, Any]]: ...
    def create_slice(self, body: dict[str, Any]) -> dict[str, Any]: ...
    def update_slice(self, body: dict[str, Any]) -> dict[str, Any]: ...
    def delete_slice(self, name: str) -> None: ...


class ApiSliceClient:
    def __init__(self, rest: KubeRest) -> None:
        self._rest = rest

    def list_slices(self, node_name: str, driver: str) -> list[dict[str, Any]]:
        selector = f"spec.nodeName={node_name},spec.driver={driver}"
        return self._rest.get(SLICES_PATH, {"fieldSelector": selector}).get("items") or []

    def create_slice(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._rest.request("POST", SLICES_PATH, body=body)

    def update_slice(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._rest.request("PUT", f"{SLICES_PATH}/{body['metadata']['name']}", body=body)

    def delete_slice(self, name: str) -> None:
        try:
            self._rest.request("DELETE", f"{SLICES_PATH}/{name}")
        except ApiError as exc:
            if not exc.not_found:
                raise


class PartitionableUnsupported(Exception):
    """The API server dropped sharedCounters: DRAPartitionableDevices is off."""


@dataclass(frozen=True)
class PublishResult:
    generation: int
    slice_names: tuple[str, ...]
    changed: bool
    resource_slice_count: int


class SlicePublisher:
    def __init__(
        self,
        client: SliceClient,
        driver: str,
        node_name: str,
        owner: dict[str, Any] | None = None,
    ) -> None:
        self._client = client
        self._driver = driver
        self._node = node_name
        self._owner = owner
        self._generation = 0
        self.last: PublishResult | None = None
        # Slices never updated nor deleted (not taken for this publisher's), though their
        # generation counts: what a misbehaving restart leaves behind.
        self.spared: frozenset[str] = frozenset()

    def existing(self) -> list[dict[str, Any]]:
        """The slices of this driver on this node as the API server has them now."""
        return self._client.list_slices(self._node, self._driver)

    def publish(self, plan: PoolPlan, attempts: int = 3) -> PublishResult:
        for attempt in range(1, attempts + 1):
            try:
                self.last = self._publish_once(plan)
                return self.last
            except ApiError as exc:
                # Conflict: someone (the kubelet, a previous instance) changed
                # the slices between list and write; list again and retry.
                if not exc.conflict or attempt == attempts:
                    raise
                log.info("slice write conflict, retrying (%s)", exc)
        raise AssertionError("unreachable")

    def _publish_once(self, plan: PoolPlan) -> PublishResult:
        listed = self._client.list_slices(self._node, self._driver)
        existing = {
            s["metadata"]["name"]: s for s in listed if s["metadata"]["name"] not in self.spared
        }
        content_hash = plan.content_hash()
        generations = {int(s["spec"]["pool"].get("generation", 0)) for s in existing.values()}
        highest = max(int(s["spec"]["pool"].get("generation", 0)) for s in listed) if listed else 0
        wanted = [s.name for s in plan.slices]
        count = plan.slices[0].spec["pool"]["resourceSliceCount"] if plan.slices else 0
        up_to_date = (
            set(existing) == set(wanted)
            and len(generations) == 1
            and all(
                (s["metadata"].get("annotations") or {}).get(HASH_ANNOTATION) == content_hash
                for s in existing.values()
            )
        )
        if up_to_date:
            self._generation = max([self._generation, *generations])
            return PublishResult(self._generation, tuple(wanted), False, count)

        generation = max(self._generation, highest) + 1
        for item in plan.slices:
            body = self._body(item.name, item.spec, generation, content_hash)
            if item.name in existing:
                body["metadata"]["resourceVersion"] = existing[item.name]["metadata"][
                    "resourceVersion"
                ]
                stored = self._client.update_slice(body)
            else:
                stored = self._client.create_slice(body)
            if "sharedCounters" in item.spec and not (stored.get("spec") or {}).get(
                "sharedCounters"
            ):
                raise PartitionableUnsupported(item.name)
        for name in set(existing) - set(wanted):
            self._client.delete_slice(name)
        self._generation = generation
        log.info(
            "published pool %s generation %d: %d slice(s), devices %s",
            plan.pool,
            generation,
            len(wanted),
            ",".join(plan.published_devices) or "-",
        )
        return PublishResult(generation, tuple(wanted), True, count)

    def _body(
        self, name: str, spec: dict[str, Any], generation: int, content_hash: str
    ) -> dict[str, Any]:
        full_spec = dict(spec)
        full_spec["pool"] = {**spec["pool"], "generation": generation}
        metadata: dict[str, Any] = {
            "name": name,
            "labels": {MANAGED_BY_LABEL: MANAGED_BY},
            "annotations": {HASH_ANNOTATION: content_hash},
        }
        if self._owner:
            metadata["ownerReferences"] = [self._owner]
        return {
            "apiVersion": API_VERSION,
            "kind": "ResourceSlice",
            "metadata": metadata,
            "spec": full_spec,
        }

    def delete_all(self) -> None:
        for item in self._client.list_slices(self._node, self._driver):
            self._client.delete_slice(item["metadata"]["name"])


def node_owner_reference(node: dict[str, Any]) -> dict[str, Any]:
    # No blockOwnerDeletion: that would need update on nodes/finalizers.
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "name": node["metadata"]["name"],
        "uid": node["metadata"]["uid"],
        "controller": True,
    }
