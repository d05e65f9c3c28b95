"""Device metadata files (KEP-5304, DRA-CORE-010): where a container finds the file of a
request, and whether what it holds matches the claim's allocation (pure: claims as the API
serves them, file text as read in the container).

The layout and format are those of k8s.io/dynamic-resource-allocation api/metadata (v0.36.3:
v1alpha1; v0.37.2: v1beta1 and v1alpha1): one file per (claim, base request, driver), at
``<CONTAINER_DIR>/resourceclaims/<claim>/<request>/<driver>-metadata.json`` for a claim the pod
names, ``<CONTAINER_DIR>/resourceclaimtemplates/<pod claim name>/...`` for one generated from a
template; a stream of JSON documents, the same DeviceMetadata object once per API version the
writer knows, newest first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.model.device_status import network_problems

CONTAINER_DIR = "/var/run/kubernetes.io/dra-device-attributes"
API_GROUP = "metadata.resource.k8s.io"
# The versions judged, newest first: the first object of one of them counts. Newer versions are
# skipped, as the upstream decoder skips those it does not know; a version added upstream is
# added here.
KNOWN_VERSIONS = (f"{API_GROUP}/v1beta1", f"{API_GROUP}/v1alpha1")
KIND = "DeviceMetadata"
# Set by the ResourceClaim controller on the claims it generates from a pod's template.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
# A device attribute holds exactly one of these (resource.k8s.io/v1 DeviceAttribute).
ATTRIBUTE_TYPES: Mapping[str, type] = {
    "int": int,
    "bool": bool,
    "string": str,
    "version": str,
}

DeviceRef = tuple[str, str, str]  # driver, pool, device


@dataclass(frozen=True)
class ExpectedFile:
    """What the metadata file of one base request of a claim must say."""

    claim: str
    namespace: str
    uid: str
    pod_claim_name: str | None  # set for a claim generated from a template
    request: str  # the base request
    result_requests: frozenset[str]  # as the results name it: `<request>[/<subrequest>]`
    devices: frozenset[DeviceRef]

    def path(self, driver: str) -> str:
        if self.pod_claim_name:
            where = f"resourceclaimtemplates/{self.pod_claim_name}"
        else:
            where = f"resourceclaims/{self.claim}"
        return f"{CONTAINER_DIR}/{where}/{self.request}/{driver}-metadata.json"

    def __str__(self) -> str:
        return f"request {self.request} of ResourceClaim {self.namespace}/{self.claim}"


def expected_files(claim: Mapping[str, Any], driver: str) -> list[ExpectedFile]:
    """One per base request with results of `driver`, in result order."""
    meta = claim.get("metadata") or {}
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    pod_claim_name = (meta.get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION) or None
    requests: dict[str, set[str]] = {}
    devices: dict[str, set[DeviceRef]] = {}
    for result in results:
        if result.get("driver") != driver:
            continue
        name = str(result.get("request") or "")
        base = name.split("/", 1)[0]
        requests.setdefault(base, set()).add(name)
        devices.setdefault(base, set()).add(
            (driver, str(result.get("pool") or ""), str(result.get("device") or ""))
        )
    return [
        ExpectedFile(
            claim=str(meta.get("name") or ""),
            namespace=str(meta.get("namespace") or ""),
            uid=str(meta.get("uid") or ""),
            pod_claim_name=pod_claim_name,
            request=base,
            result_requests=frozenset(names),
            devices=frozenset(devices[base]),
        )
        for base, names in requests.items()
    ]


class StreamError(ValueError):
    """The text is not a stream of JSON documents."""


def decode_stream(text: str) -> list[Any]:
    """The JSON documents of `text`, in order (whitespace between them is allowed)."""
    decoder = json.JSONDecoder()
    documents: list[Any] = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return documents
        try:
            document, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise StreamError(f"document {len(documents) + 1}: {exc}") from exc
        documents.append(document)


def first_known(documents: Sequence[Any]) -> Mapping[str, Any] | None:
    """The first object of a known version."""
    for document in documents:
        if isinstance(document, Mapping) and document.get("apiVersion") in KNOWN_VERSIONS:
            return document
    return None


def describe_device(ref: DeviceRef) -> str:
    driver, pool, device = ref
    return f"{driver} {pool}/{device}"


def _attribute_problems(where: str, attributes: Any) -> list[str]:
    if attributes is None:
        return []
    if not isinstance(attributes, Mapping):
        return [f"{where}: attributes is not an object"]
    problems = []
    for name, value in attributes.items():
        kinds = [k for k in ATTRIBUTE_TYPES if isinstance(value, Mapping) and k in value]
        if len(kinds) != 1 or len(value) != 1:
            problems.append(
                f"{where}: attribute {name} is {value!r}, not exactly one of "
                f"{', '.join(ATTRIBUTE_TYPES)}"
            )
            continue
        typed = value[kinds[0]]
        if not isinstance(typed, ATTRIBUTE_TYPES[kinds[0]]) or (
            kinds[0] == "int" and isinstance(typed, bool)
        ):
            problems.append(f"{where}: attribute {name} has a {kinds[0]} of {typed!r}")
    return problems


def _device_problems(expected: ExpectedFile, devices: Any) -> list[str]:
    if not isinstance(devices, Sequence) or isinstance(devices, str):
        return [f"its devices are {devices!r}, not a list"]
    listed: set[DeviceRef] = set()
    problems = []
    for i, device in enumerate(devices):
        if not isinstance(device, Mapping):
            problems.append(f"devices[{i}] is not an object")
            continue
        ref = (str(device.get("driver")), str(device.get("pool")), str(device.get("name")))
        listed.add(ref)
        problems += _attribute_problems(f"device {describe_device(ref)}", device.get("attributes"))
        problems += network_problems(f"device {describe_device(ref)}", device.get("networkData"))
    missing = sorted(expected.devices - listed)
    foreign = sorted(listed - expected.devices)
    if missing or foreign:
        problems.insert(
            0,
            f"it lists {', '.join(map(describe_device, sorted(listed))) or 'no device'}, but "
            f"the request was allocated {', '.join(map(describe_device, sorted(expected.devices)))}"
            + (f" (missing {', '.join(map(describe_device, missing))})" if missing else "")
            + (
                f" (not allocated to it: {', '.join(map(describe_device, foreign))})"
                if foreign
                else ""
            ),
        )
    return problems


def file_problems(text: str, expected: ExpectedFile) -> list[str]:
    """What is wrong with the metadata file of `expected` read as `text`; empty when it
    matches the allocation."""
    try:
        documents = decode_stream(text)
    except StreamError as exc:
        return [f"it is not a stream of JSON documents ({exc}): {text[:200]!r}"]
    found = first_known(documents)
    if found is None:
        versions = [d.get("apiVersion") if isinstance(d, Mapping) else d for d in documents]
        return [
            f"it has no object of a known version ({', '.join(KNOWN_VERSIONS)}); "
            f"apiVersions found: {versions}"
        ]
    at = str(found.get("apiVersion"))
    problems = []
    if found.get("kind") != KIND:
        problems.append(f"its {at} object is of kind {found.get('kind')!r}, not {KIND}")
    meta = found.get("metadata") or {}
    seen = (meta.get("name"), meta.get("namespace"), meta.get("uid"))
    want = (expected.claim, expected.namespace, expected.uid)
    if seen != want:
        problems.append(
            f"it names claim {seen[1]}/{seen[0]} (UID {seen[2]}), not {want[1]}/{want[0]} "
            f"(UID {want[2]})"
        )
    if found.get("podClaimName") != expected.pod_claim_name:
        problems.append(
            f"its podClaimName is {found.get('podClaimName')!r}, not {expected.pod_claim_name!r}"
        )
    requests = found.get("requests")
    if not isinstance(requests, Sequence) or len(requests) != 1:
        count = len(requests) if isinstance(requests, Sequence) else requests
        return [*problems, f"it has {count!r} requests, not exactly one"]
    (request,) = requests
    if not isinstance(request, Mapping):
        return [*problems, f"its request is {request!r}, not an object"]
    if request.get("name") not in expected.result_requests:
        problems.append(
            f"its request is named {request.get('name')!r}, not "
            f"{' or '.join(sorted(expected.result_requests))} as in the allocation results"
        )
    return problems + _device_problems(expected, request.get("devices"))
