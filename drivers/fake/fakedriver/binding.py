"""Report binding conditions (KEP-5007, DRADeviceBindingConditions) of this node's devices.

A device published with `bindingConditions` keeps the scheduler in PreBind until every one of
them is True in the claim's `status.devices` entry for the device; one of its
`bindingFailureConditions` True instead makes the scheduler give up, deallocate the claim and
schedule the pod again. The pod is not bound yet, so the kubelet never calls
NodePrepareResources: the driver watches ResourceClaims itself and picks the allocation
results that name its driver, its node's pool and binding conditions.

Each allocation is handled once, keyed by claim UID and `allocationTimestamp`: after a
deallocation the scheduler allocates afresh (new timestamp, status.devices wiped), and the
driver reports again. The write is a server-side apply with a field manager of its own, so the
prepare-time apply of the same entry (fakedriver.device_status) neither owns nor drops these
conditions.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from fakedriver.controls import FaultState
from fakedriver.device_status import APPLY_PATCH
from fakedriver.kubeapi import ApiError, KubeRest
from fakedriver.misbehave import status as hooks

log = logging.getLogger(__name__)

CLAIMS_PATH = "/apis/resource.k8s.io/v1/resourceclaims"
ATTACHED_REASON = "Attached"
FAILED_REASON = "AttachFailed"
# Statuses a retry cannot change: the claim is gone, or no longer allocated this device.
_FINAL = (404, 409, 422)


@dataclass(frozen=True)
class PendingDevice:
    """One allocated device of this node waiting for its binding conditions."""

    pool: str
    device: str
    conditions: tuple[str, ...]
    failure_conditions: tuple[str, ...]


@dataclass(frozen=True)
class PendingClaim:
    namespace: str
    name: str
    uid: str
    allocated_at: str  # status.allocation.allocationTimestamp ("" when the scheduler set none)
    devices: tuple[PendingDevice, ...]


def _true(entry: Mapping[str, Any] | None, condition: str) -> bool:
    return any(
        c.get("type") == condition and c.get("status") == "True"
        for c in (entry or {}).get("conditions") or ()
    )


def pending(claim: Mapping[str, Any], driver: str, pool: str) -> PendingClaim | None:
    """The claim's allocated devices of `driver` in `pool` with binding conditions that are
    neither all True nor failed in status.devices; None when there is nothing to report."""
    meta = claim.get("metadata") or {}
    status = claim.get("status") or {}
    allocation = status.get("allocation") or {}
    entries = {
        (e.get("driver"), e.get("pool"), e.get("device")): e for e in status.get("devices") or ()
    }
    devices = []
    for result in (allocation.get("devices") or {}).get("results") or ():
        conditions = tuple(result.get("bindingConditions") or ())
        if result.get("driver") != driver or result.get("pool") != pool or not conditions:
            continue
        failures = tuple(result.get("bindingFailureConditions") or ())
        entry = entries.get((driver, pool, result.get("device")))
        if all(_true(entry, c) for c in conditions) or any(_true(entry, c) for c in failures):
            continue
        devices.append(PendingDevice(pool, str(result.get("device")), conditions, failures))
    if not devices or meta.get("deletionTimestamp"):
        return None
    return PendingClaim(
        namespace=str(meta.get("namespace")),
        name=str(meta.get("name")),
        uid=str(meta.get("uid")),
        allocated_at=str(allocation.get("allocationTimestamp") or ""),
        devices=tuple(dict.fromkeys(devices)),
    )


def condition(kind: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }


def entry_for(
    driver: str, device: PendingDevice, failure: str | None, node: str, now: str
) -> dict[str, Any]:
    """The status.devices entry: every binding condition True, or (an injected failure) the
    first failure condition True."""
    if failure is not None:
        conditions = [condition(device.failure_conditions[0], FAILED_REASON, failure, now)]
    else:
        message = f"attached on node {node}"
        conditions = [condition(c, ATTACHED_REASON, message, now) for c in device.conditions]
    return {
        "driver": driver,
        "pool": device.pool,
        "device": device.device,
        "conditions": conditions,
    }


class BindingStatusWriter(Protocol):
    def apply(self, claim: PendingClaim, entries: list[dict[str, Any]]) -> None: ...


class ApiBindingStatusWriter:
    """Server-side apply of the entries under the driver's binding field manager."""

    def __init__(self, rest: KubeRest, field_manager: str) -> None:
        self._rest = rest
        self._field_manager = field_manager

    def apply(self, claim: PendingClaim, entries: list[dict[str, Any]]) -> None:
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": claim.name, "namespace": claim.namespace, "uid": claim.uid},
            "status": {"devices": entries},
        }
        self._rest.request(
            "PATCH",
            f"/apis/resource.k8s.io/v1/namespaces/{claim.namespace}/resourceclaims/"
            f"{claim.name}/status",
            query={"fieldManager": self._field_manager, "force": True},
            body=json.dumps(body),
            content_type=APPLY_PATCH,
        )


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class BindingReporter:
    """Decides, per claim seen, whether to report its devices' binding conditions."""

    def __init__(
        self,
        writer: BindingStatusWriter,
        driver: str,
        node: str,
        faults: FaultState,
        now: Callable[[], str] = _now,
        attempts: int = 3,
        retry_delay: float = 1.0,
    ) -> None:
        self._writer = writer
        self._driver = driver
        self._node = node  # the fake driver's pool is named after its node
        self._faults = faults
        self._now = now
        self._attempts = attempts
        self._retry_delay = retry_delay
        self._handled: set[tuple[str, str]] = set()
        self.written = 0
        self.failed = 0

    def _key(self, claim: PendingClaim) -> tuple[str, str]:
        if hooks.once_per_claim(self._faults):
            return (claim.uid, "")
        return (claim.uid, claim.allocated_at)

    def observe(self, claim: Mapping[str, Any]) -> None:
        status = claim.get("status") or {}
        if not status.get("allocation") and not hooks.once_per_claim(self._faults):
            # Deallocated: the next allocation is new even within the same second.
            self.forget(str((claim.get("metadata") or {}).get("uid")))
            return
        todo = pending(claim, self._driver, self._node)
        if todo is None:
            return
        key = self._key(todo)
        if key in self._handled:
            return
        if hooks.skips_binding(self._faults, todo.uid):
            self._handled.add(key)
            return
        now = self._now()
        entries = [
            entry_for(self._driver, d, self._failure(d), self._node, now) for d in todo.devices
        ]
        if self._write(todo, entries):
            self._handled.add(key)

    def _failure(self, device: PendingDevice) -> str | None:
        if not device.failure_conditions:
            return None
        return self._faults.take_binding_failure(device.device)

    def _write(self, claim: PendingClaim, entries: list[dict[str, Any]]) -> bool:
        for attempt in range(1, self._attempts + 1):
            try:
                self._writer.apply(claim, entries)
            except ApiError as exc:
                if exc.status in _FINAL or attempt == self._attempts:
                    self.failed += 1
                    log.warning(
                        "binding status of claim %s/%s (%s) not written: %s",
                        claim.namespace, claim.name, claim.uid, exc,
                    )  # fmt: skip
                    return exc.status in _FINAL  # a later allocation is a new key
                time.sleep(self._retry_delay)
                continue
            self.written += 1
            log.info(
                "binding status of claim %s/%s (%s): %s",
                claim.namespace, claim.name, claim.uid,
                [(e["device"], [c["type"] for c in e["conditions"]]) for e in entries],
            )  # fmt: skip
            return True
        return False

    def forget(self, uid: str) -> None:
        """The claim is gone: its keys can go too."""
        self._handled = {k for k in self._handled if k[0] != uid}


class ClaimWatcher:
    """List and watch every ResourceClaim (they have no field selector that names a node or
    driver), handing each to the reporter; reconnects with backoff."""

    def __init__(
        self,
        rest: KubeRest,
        reporter: BindingReporter,
        stopping: threading.Event,
        watch_timeout: int = 240,
    ) -> None:
        self._rest = rest
        self._reporter = reporter
        self._stopping = stopping
        self._watch_timeout = watch_timeout

    def start(self) -> None:
        threading.Thread(target=self._run, name="binding-watch", daemon=True).start()

    def _run(self) -> None:
        backoff = 1.0
        resource_version = ""
        while not self._stopping.is_set():
            try:
                if not resource_version:
                    resource_version = self._list()
                resource_version = self._watch(resource_version)
                backoff = 1.0
                continue
            except ApiError as exc:
                if exc.status != 410:  # 410: too old, relist at once
                    log.warning("claim watch failed: %s; retrying in %.0fs", exc, backoff)
            except Exception as exc:  # network errors: reconnect with backoff
                log.warning("claim watch interrupted: %s; retrying in %.0fs", exc, backoff)
            resource_version = ""
            self._stopping.wait(backoff)
            backoff = min(backoff * 2, 30.0)

    def _list(self) -> str:
        listing = self._rest.get(CLAIMS_PATH)
        for claim in listing.get("items") or ():
            self._reporter.observe(claim)
        return str((listing.get("metadata") or {}).get("resourceVersion", ""))

    def _watch(self, resource_version: str) -> str:
        query = {
            "watch": True,
            "resourceVersion": resource_version,
            "allowWatchBookmarks": True,
            "timeoutSeconds": self._watch_timeout,
        }
        for event in self._rest.stream(CLAIMS_PATH, query):
            if self._stopping.is_set():
                break
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                raise ApiError(int(obj.get("code", 0)), str(obj.get("message", "")))
            meta = obj.get("metadata") or {}
            if kind in ("ADDED", "MODIFIED"):
                self._reporter.observe(obj)
            elif kind == "DELETED":
                self._reporter.forget(str(meta.get("uid")))
            resource_version = str(meta.get("resourceVersion", resource_version))
        return resource_version
