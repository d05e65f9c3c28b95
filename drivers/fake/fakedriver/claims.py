"""Reading ResourceClaims and extracting what this driver must prepare.

The kubelet only sends claim namespace/name/UID; the allocation (devices and
opaque config) is read from the API. ``ClaimReader`` is the seam that unit
tests replace with an in-memory map.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fakedriver.kubeapi import ApiError, KubeRest

# Set by the ResourceClaim controller on the claims it generates from a pod's template.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


class ClaimError(Exception):
    """The claim cannot be prepared; the message goes back to the kubelet."""


class ClaimNotFound(ClaimError):
    """The API has no such claim (any more)."""


class ClaimKey(Protocol):
    uid: str
    namespace: str
    name: str


class ClaimReader(Protocol):
    def get_claim(self, namespace: str, name: str) -> dict[str, Any]:
        """The ResourceClaim as the API serves it (camelCase JSON)."""
        ...


class ApiClaimReader:
    def __init__(self, rest: KubeRest) -> None:
        self._rest = rest

    def get_claim(self, namespace: str, name: str) -> dict[str, Any]:
        try:
            return self._rest.get(
                f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"
            )
        except ApiError as exc:
            error = ClaimNotFound if exc.not_found else ClaimError
            raise error(f"get ResourceClaim {namespace}/{name}: {exc}") from exc


@dataclass(frozen=True)
class AllocatedDevice:
    request: str  # as in the result: "<request>" or "<request>/<subrequest>"
    pool: str
    device: str
    admin_access: bool = False
    share_id: str | None = None

    @property
    def base_request(self) -> str:
        return self.request.split("/", 1)[0]


@dataclass(frozen=True)
class OpaqueConfig:
    source: str  # FromClass | FromClaim
    requests: tuple[str, ...]  # empty: all requests
    parameters: Mapping[str, str]

    def applies_to(self, request: str) -> bool:
        if not self.requests:
            return True
        base = request.split("/", 1)[0]
        return request in self.requests or base in self.requests


@dataclass(frozen=True)
class ClaimAllocation:
    uid: str
    namespace: str
    name: str
    devices: tuple[AllocatedDevice, ...]
    configs: tuple[OpaqueConfig, ...]
    pod_claim_name: str | None = None  # claims generated from a pod's template

    def config_for(self, request: str) -> dict[str, str]:
        """Merged opaque parameters: class config first, then claim config wins."""
        merged: dict[str, str] = {}
        for source in ("FromClass", "FromClaim"):
            for config in self.configs:
                if config.source == source and config.applies_to(request):
                    merged.update(config.parameters)
        return merged


def _parameters(raw: Any, where: str) -> dict[str, str]:
    if not isinstance(raw, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise ClaimError(f"{where}: opaque parameters must be a JSON object of string values")
    return dict(raw)


def allocation_for_driver(
    claim: Mapping[str, Any], driver: str, pool: str, uid: str | None = None
) -> ClaimAllocation:
    """This driver's part of a claim's allocation on this node's pool."""
    meta = claim.get("metadata") or {}
    ref = f"{meta.get('namespace')}/{meta.get('name')}"
    if uid is not None and meta.get("uid") != uid:
        raise ClaimError(f"ResourceClaim {ref} was replaced (UID {meta.get('uid')}, want {uid})")
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation:
        raise ClaimError(f"ResourceClaim {ref} is not allocated")
    results = (allocation.get("devices") or {}).get("results") or []
    devices: list[AllocatedDevice] = []
    for i, result in enumerate(results):
        if result.get("driver") != driver:
            continue
        if result.get("pool") != pool:
            raise ClaimError(
                f"ResourceClaim {ref}: result {i} is device {result.get('device')} of pool "
                f"{result.get('pool')}, not of this node's pool {pool}"
            )
        devices.append(
            AllocatedDevice(
                request=str(result.get("request", "")),
                pool=pool,
                device=str(result.get("device", "")),
                admin_access=bool(result.get("adminAccess")),
                share_id=result.get("shareID"),
            )
        )
    if not devices:
        raise ClaimError(f"ResourceClaim {ref} has no devices of driver {driver}")
    configs: list[OpaqueConfig] = []
    for i, entry in enumerate((allocation.get("devices") or {}).get("config") or []):
        opaque = entry.get("opaque") or {}
        if opaque.get("driver") != driver:
            continue  # another driver's configuration is not ours to judge
        configs.append(
            OpaqueConfig(
                source=str(entry.get("source", "FromClaim")),
                requests=tuple(entry.get("requests") or ()),
                parameters=_parameters(
                    opaque.get("parameters"), f"ResourceClaim {ref} config[{i}]"
                ),
            )
        )
    return ClaimAllocation(
        uid=str(meta.get("uid", "")),
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        devices=tuple(devices),
        configs=tuple(configs),
        pod_claim_name=(meta.get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION) or None,
    )


def group_devices(devices: Sequence[AllocatedDevice]) -> list[tuple[AllocatedDevice, list[str]]]:
    """One entry per (device, shareID) with all requests it serves, in result order."""
    grouped: dict[tuple[str, str | None], tuple[AllocatedDevice, list[str]]] = {}
    for device in devices:
        key = (device.device, device.share_id)
        if key not in grouped:
            grouped[key] = (device, [])
        if device.request not in grouped[key][1]:
            grouped[key][1].append(device.request)
    return list(grouped.values())
