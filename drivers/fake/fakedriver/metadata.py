"""Device metadata (KEP-5304): for each request of a prepared claim, a file that the containers
using the request read under /var/run/kubernetes.io/dra-device-attributes.

Laid out as the upstream kubelet-plugin helper (k8s.io/dynamic-resource-allocation/kubeletplugin)
lays it out, so the fake driver is judged like the drivers that use that helper:

- host file ``<plugin dir>/dra-device-metadata/<namespace>_<claim>/<request>/metadata.json``: a
  JSON stream holding the same DeviceMetadata object once per API version, newest first;
- CDI spec ``<cdi dir>/<driver>_metadata_<claim UID>_<request>.json`` of kind
  ``<driver>/metadata``, whose one device bind-mounts that file read-only at the in-container
  path;
- that CDI device's id goes with the first prepared device of the request, so the kubelet
  hands it to exactly the containers that use the request.

``<request>`` in paths is the base request; the object names the request as the allocation
result does (``<request>/<subrequest>`` for a prioritized list).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakedriver.cdi import CDI_VERSION, CdiSpecStore

# Newest first, as the helper writes them (v1beta1 is required by its 1.37 version).
API_VERSIONS = ("metadata.resource.k8s.io/v1beta1", "metadata.resource.k8s.io/v1alpha1")
CONTAINER_DIR = "/var/run/kubernetes.io/dra-device-attributes"
HOST_SUBDIR = "dra-device-metadata"


@dataclass(frozen=True)
class MetadataDevice:
    pool: str
    name: str
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RequestMetadata:
    request: str  # as in the allocation result
    devices: tuple[MetadataDevice, ...]

    @property
    def base_request(self) -> str:
        return self.request.split("/", 1)[0]


@dataclass(frozen=True)
class ClaimIdentity:
    uid: str
    namespace: str
    name: str
    pod_claim_name: str | None = None  # claims generated from a pod's template only


def container_path(driver: str, claim: ClaimIdentity, base_request: str) -> str:
    if claim.pod_claim_name:
        where = f"resourceclaimtemplates/{claim.pod_claim_name}"
    else:
        where = f"resourceclaims/{claim.name}"
    return f"{CONTAINER_DIR}/{where}/{base_request}/{driver}-metadata.json"


def metadata_object(
    driver: str, claim: ClaimIdentity, request: RequestMetadata, api_version: str
) -> dict[str, Any]:
    devices = []
    for device in request.devices:
        entry: dict[str, Any] = {"driver": driver, "pool": device.pool, "name": device.name}
        if device.attributes:
            entry["attributes"] = dict(device.attributes)
        devices.append(entry)
    body: dict[str, Any] = {
        "kind": "DeviceMetadata",
        "apiVersion": api_version,
        "metadata": {
            "name": claim.name,
            "namespace": claim.namespace,
            "uid": claim.uid,
            "generation": 1,
        },
    }
    if claim.pod_claim_name:
        body["podClaimName"] = claim.pod_claim_name
    body["requests"] = [{"name": request.request, "devices": devices}]
    return body


def encode_stream(driver: str, claim: ClaimIdentity, request: RequestMetadata) -> str:
    return "".join(
        json.dumps(metadata_object(driver, claim, request, version), sort_keys=True) + "\n"
        for version in API_VERSIONS
    )


@dataclass(frozen=True)
class WrittenMetadata:
    device_ids: Mapping[str, str]  # base request -> CDI device id
    specs: Mapping[str, dict[str, Any]]  # CDI spec path -> its contents (for the checkpoint)


class MetadataStore:
    """Writes and removes the metadata files and their CDI specs of prepared claims."""

    def __init__(self, plugin_dir: Path, cdi: CdiSpecStore, driver: str) -> None:
        self.root = plugin_dir / HOST_SUBDIR
        self._cdi = cdi
        self._driver = driver

    @property
    def kind(self) -> str:
        return f"{self._driver}/metadata"

    def claim_dir(self, namespace: str, name: str) -> Path:
        return self.root / f"{namespace}_{name}"

    def host_path(self, namespace: str, name: str, base_request: str) -> Path:
        return self.claim_dir(namespace, name) / base_request / "metadata.json"

    def spec_path(self, uid: str, base_request: str) -> Path:
        return self._cdi.dir / f"{self._driver}_metadata_{uid}_{base_request}.json"

    def spec(self, claim: ClaimIdentity, base_request: str) -> dict[str, Any]:
        mount = {
            "hostPath": str(self.host_path(claim.namespace, claim.name, base_request)),
            "containerPath": container_path(self._driver, claim, base_request),
            "options": ["ro", "bind"],
        }
        return {
            "cdiVersion": CDI_VERSION,
            "kind": self.kind,
            "devices": [
                {"name": f"{claim.uid}_{base_request}", "containerEdits": {"mounts": [mount]}}
            ],
        }

    def write(self, claim: ClaimIdentity, requests: Sequence[RequestMetadata]) -> WrittenMetadata:
        ids: dict[str, str] = {}
        specs: dict[str, dict[str, Any]] = {}
        for request in requests:
            base = request.base_request
            _write_atomically(
                self.host_path(claim.namespace, claim.name, base),
                encode_stream(self._driver, claim, request),
            )
            spec = self.spec(claim, base)
            path = self._cdi.write_to(self.spec_path(claim.uid, base), spec)
            specs[str(path)] = spec
            ids[base] = f"{self.kind}={claim.uid}_{base}"
        return WrittenMetadata(ids, specs)

    def remove(self, namespace: str, name: str, uid: str) -> None:
        shutil.rmtree(self.claim_dir(namespace, name), ignore_errors=True)
        for path in self._cdi.dir.glob(f"{self._driver}_metadata_{uid}_*.json"):
            path.unlink(missing_ok=True)

    def spec_uids(self) -> dict[str, list[Path]]:
        """The claim UIDs of the metadata CDI specs present, with their files."""
        prefix = f"{self._driver}_metadata_"
        found: dict[str, list[Path]] = {}
        for path in sorted(self._cdi.dir.glob(f"{prefix}*.json")):
            uid = path.name[len(prefix) :].split("_", 1)[0]  # UIDs have no underscore
            found.setdefault(uid, []).append(path)
        return found


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


def requests_metadata(
    allocated: Sequence[tuple[str, str, str]],
    attributes: Callable[[str], Mapping[str, Any]],
    *,
    all_requests: bool = False,
) -> list[RequestMetadata]:
    """One entry per request of ``allocated`` ((request, pool, device) in result order), each
    with its devices once. ``all_requests`` (a misbehaviour): every request lists all of the
    claim's devices, as by a driver that describes the claim, not the request."""
    by_request: dict[str, dict[tuple[str, str], None]] = {}
    for request, pool, device in allocated:
        by_request.setdefault(request, {})[(pool, device)] = None
    every = {key: None for keys in by_request.values() for key in keys}
    return [
        RequestMetadata(
            request,
            tuple(
                MetadataDevice(pool, device, attributes(device))
                for pool, device in (every if all_requests else keys)
            ),
        )
        for request, keys in by_request.items()
    ]
