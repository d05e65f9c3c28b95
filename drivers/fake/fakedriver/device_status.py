"""Report the devices of a prepared claim in its `status.devices` (ResourceClaim device status).

After a claim is prepared the driver applies one entry per prepared device: a `Ready`
condition, `data` describing the fake device and `networkData` a network-attached device would
carry. Server-side apply on the status subresource with the driver's own field manager keeps
other drivers' entries untouched; v1.37.2 authorizes the change through `associated-node:patch`
on `resourceclaims/driver` named after the driver (drivers/fake/deploy/rbac.yaml), and drops
the entries itself when it deallocates the claim, so unprepare writes nothing.

A status write is best effort: the devices are prepared whether it lands or not (the kubelet
needs the prepare answer, not the status), and a failure is logged.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from fakedriver.catalog import DeviceSpec, NodeInventory
from fakedriver.checkpoint import PreparedClaim, PreparedDevice
from fakedriver.controls import FaultState
from fakedriver.kubeapi import KubeRest
from fakedriver.misbehave import status as hooks

log = logging.getLogger(__name__)

APPLY_PATCH = "application/apply-patch+yaml"
READY = "Ready"
PREPARED_REASON = "Prepared"
# TEST-NET-1 (RFC 5737): addresses that can never clash with a real network.
FAKE_NETWORK = "192.0.2"


def _digest(pool: str, device: str) -> bytes:
    return hashlib.sha256(f"{pool}/{device}".encode()).digest()


def network_data(pool: str, device: str) -> dict[str, Any]:
    """A stable interface of the device: name (at most 15 bytes, as Linux allows), one IPv4
    address in CIDR form and a locally administered unicast MAC address."""
    digest = _digest(pool, device)
    mac = ":".join(f"{b:02x}" for b in (0x02, *digest[:5]))
    return {
        "interfaceName": f"fdra{digest[5:10].hex()[:8]}",
        "ips": [f"{FAKE_NETWORK}.{1 + digest[10] % 254}/24"],
        "hardwareAddress": mac,
    }


def device_entry(
    driver: str, device: PreparedDevice, spec: DeviceSpec | None, node: str, now: str
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "driver": driver,
        "pool": device.pool_name,
        "device": device.device_name,
        "conditions": [
            {
                "type": READY,
                "status": "True",
                "reason": PREPARED_REASON,
                "message": f"prepared on node {node}",
                "lastTransitionTime": now,
            }
        ],
        "networkData": network_data(device.pool_name, device.device_name),
    }
    if device.share_id:
        entry["shareID"] = device.share_id
    if spec is not None:
        entry["data"] = {"model": spec.model, "memory": spec.memory, "uuid": spec.uuid}
    return entry


def device_entries(
    driver: str,
    claim: PreparedClaim,
    inventory: Mapping[str, DeviceSpec],
    node: str,
    now: str,
) -> list[dict[str, Any]]:
    """One entry per prepared device of the claim (a shared device once per shareID)."""
    entries: dict[tuple[str, str, str | None], dict[str, Any]] = {}
    for device in claim.devices:
        key = (device.pool_name, device.device_name, device.share_id)
        entries.setdefault(
            key, device_entry(driver, device, inventory.get(device.device_name), node, now)
        )
    return list(entries.values())


def apply_body(claim: PreparedClaim, entries: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The apply configuration: the claim's UID makes the apply fail on a claim that was
    deleted and created again under the same name."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": claim.name, "namespace": claim.namespace, "uid": claim.uid},
        "status": {"devices": list(entries)},
    }


class ClaimStatusWriter(Protocol):
    def apply(self, claim: PreparedClaim, entries: list[dict[str, Any]]) -> None: ...


class ApiClaimStatusWriter:
    def __init__(self, rest: KubeRest, field_manager: str) -> None:
        self._rest = rest
        self._field_manager = field_manager

    def apply(self, claim: PreparedClaim, entries: list[dict[str, Any]]) -> None:
        path = (
            f"/apis/resource.k8s.io/v1/namespaces/{claim.namespace}/resourceclaims/"
            f"{claim.name}/status"
        )
        self._rest.request(
            "PATCH",
            path,
            query={"fieldManager": self._field_manager, "force": True},
            # Serialized here: the client sends a string body as it is, whatever its type.
            body=json.dumps(apply_body(claim, entries)),
            content_type=APPLY_PATCH,
        )


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class DeviceStatusReporter:
    """Writes the entries of each newly prepared claim."""

    def __init__(
        self,
        writer: ClaimStatusWriter,
        driver: str,
        node: str,
        inventory: Callable[[], NodeInventory],
        faults: FaultState,
        now: Callable[[], str] = _now,
    ) -> None:
        self._writer = writer
        self._driver = driver
        self._node = node
        self._inventory = inventory
        self._faults = faults
        self._now = now
        self.written = 0
        self.failed = 0

    def prepared(self, claim: PreparedClaim) -> None:
        if hooks.skips_device_status(self._faults, claim.uid):
            return
        entries = device_entries(
            self._driver, claim, self._inventory().by_name(), self._node, self._now()
        )
        if not entries:
            return
        try:
            self._writer.apply(claim, entries)
        except Exception as exc:  # best effort: the prepare stands without it
            self.failed += 1
            log.warning(
                "writing status.devices of claim %s/%s (%s) failed: %s",
                claim.namespace,
                claim.name,
                claim.uid,
                exc,
            )
            return
        self.written += 1
