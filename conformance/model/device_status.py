"""A driver's entries in a ResourceClaim's `status.devices`, judged against the claim's
allocation (pure: camelCase dicts as the API serves them).

The v1.37.2 API server (pkg/apis/resource/validation, validateDeviceStatus) already refuses an
entry that names no allocated device, conditions without type, status, reason or
lastTransitionTime, and `networkData.ips` that are not addresses in CIDR form; the checks here
say the same in the test's words, so a platform that lets such an entry through fails as well.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import Any

CONDITION_STATUSES = ("True", "False", "Unknown")
# metav1 Condition.reason (k8s.io/apimachinery/pkg/apis/meta/v1/validation).
_REASON_RE = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")

DeviceKey = tuple[str, str, str, str]  # driver, pool, device, shareID ("" when none)


def device_key(item: Mapping[str, Any]) -> DeviceKey:
    """The key of a status entry or an allocation result (they name a device the same way)."""
    return (
        str(item.get("driver") or ""),
        str(item.get("pool") or ""),
        str(item.get("device") or ""),
        str(item.get("shareID") or ""),
    )


def describe_key(key: DeviceKey) -> str:
    driver, pool, device, share = key
    return f"{driver} {pool}/{device}" + (f" (shareID {share})" if share else "")


def allocated_keys(claim: Mapping[str, Any], driver: str) -> list[DeviceKey]:
    """The devices of `driver` in status.allocation.devices.results, each once."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    keys = [device_key(r) for r in results if r.get("driver") == driver]
    return list(dict.fromkeys(keys))


def driver_entries(claim: Mapping[str, Any], driver: str) -> list[Mapping[str, Any]]:
    """The entries of `driver` in status.devices."""
    return [
        e for e in (claim.get("status") or {}).get("devices") or [] if e.get("driver") == driver
    ]


def missing_entries(claim: Mapping[str, Any], driver: str) -> list[DeviceKey]:
    """Allocated devices of `driver` that have no entry in status.devices."""
    present = {device_key(e) for e in driver_entries(claim, driver)}
    return [key for key in allocated_keys(claim, driver) if key not in present]


def _condition_problems(where: str, conditions: Any) -> list[str]:
    if conditions is None:
        return []
    if not isinstance(conditions, Sequence) or isinstance(conditions, str):
        return [f"{where}: conditions is not a list"]
    problems = []
    for i, condition in enumerate(conditions):
        at = f"{where}: conditions[{i}]"
        if not isinstance(condition, Mapping):
            problems.append(f"{at} is not an object")
            continue
        if not condition.get("type"):
            problems.append(f"{at} has no type")
        if condition.get("status") not in CONDITION_STATUSES:
            problems.append(
                f"{at} has status {condition.get('status')!r}, not one of {CONDITION_STATUSES}"
            )
        if not _REASON_RE.match(str(condition.get("reason") or "")):
            problems.append(f"{at} has reason {condition.get('reason')!r}, not a CamelCase word")
        if not condition.get("lastTransitionTime"):
            problems.append(f"{at} has no lastTransitionTime")
    return problems


def network_problems(where: str, network: Any) -> list[str]:
    if network is None:
        return []
    if not isinstance(network, Mapping):
        return [f"{where}: networkData is not an object"]
    problems = []
    for ip in network.get("ips") or []:
        try:
            if "/" not in str(ip):
                raise ValueError("no prefix length")
            ipaddress.ip_interface(str(ip))
        except ValueError:
            problems.append(f"{where}: networkData.ips entry {ip!r} is not an address in CIDR form")
    return problems


def entry_problems(claim: Mapping[str, Any], driver: str) -> list[str]:
    """What is wrong with the entries of `driver`: one naming no allocated device of the
    claim, malformed conditions, data that is not an object, IPs not in CIDR form."""
    allocated = set(allocated_keys(claim, driver))
    problems = []
    for entry in driver_entries(claim, driver):
        key = device_key(entry)
        where = f"status.devices entry {describe_key(key)}"
        if key not in allocated:
            problems.append(f"{where} names no device of the claim's allocation")
        problems += _condition_problems(where, entry.get("conditions"))
        if "data" in entry and not isinstance(entry["data"], Mapping):
            problems.append(f"{where}: data is not a JSON object")
        problems += network_problems(where, entry.get("networkData"))
    return problems


def status_summary(claim: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a failed wait shows: the allocation results and status.devices."""
    status = (claim or {}).get("status") or {}
    results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
    return {"allocation.devices.results": results, "devices": status.get("devices") or []}
