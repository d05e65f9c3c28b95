"""The cluster's DRA inventory at the end of a run, from the API: claims per state and, per
driver pool, devices allocated, free and tainted — what monitoring built for device plugins does
not show. Device health is not in the API's objects (only in pods' status), so it is not here."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from conformance.kube.client import K8sClients

LIST_TIMEOUT_S = 20.0  # a run's end never hangs on an API server that stopped answering
CLAIM_STATES = ("in use", "allocated, not in use", "pending", "deleting")


def claim_state(claim: Mapping[str, Any]) -> str:
    """One of CLAIM_STATES: deleting wins, then in use (reserved for a consumer), allocated,
    pending (not allocated yet)."""
    if (claim.get("metadata") or {}).get("deletionTimestamp"):
        return "deleting"
    status = claim.get("status") or {}
    if status.get("reservedFor"):
        return "in use"
    if status.get("allocation"):
        return "allocated, not in use"
    return "pending"


def cluster_inventory(
    claims: Iterable[Mapping[str, Any]], slices: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """{claims: {state: n, total}, pools: [{driver, pool, devices, allocated, free, tainted}]}."""
    claims = list(claims)
    states = Counter(claim_state(c) for c in claims)
    allocated = _allocated_devices(claims)
    pools: dict[tuple[str, str], dict[str, set[str]]] = {}
    for driver, pool, device in _published_devices(slices):
        entry = pools.setdefault((driver, pool), {"devices": set(), "tainted": set()})
        entry["devices"].add(device["name"])
        if device.get("taints"):
            entry["tainted"].add(device["name"])
    rows = []
    for (driver, pool), entry in sorted(pools.items()):
        held = {d for d in entry["devices"] if (driver, pool, d) in allocated}
        rows.append(
            {
                "driver": driver,
                "pool": pool,
                "devices": len(entry["devices"]),
                "allocated": len(held),
                "free": len(entry["devices"]) - len(held),
                "tainted": len(entry["tainted"]),
            }
        )
    return {
        "claims": {state: states.get(state, 0) for state in CLAIM_STATES} | {"total": len(claims)},
        "pools": rows,
    }


def read_cluster_inventory(k8s: K8sClients, api_version: str = "v1") -> dict[str, Any]:
    """The inventory of the cluster now (raw JSON: any served version of resource.k8s.io)."""
    base = f"/apis/resource.k8s.io/{api_version}"
    claims = json.loads(k8s.get_raw(f"{base}/resourceclaims", timeout=LIST_TIMEOUT_S))
    slices = json.loads(k8s.get_raw(f"{base}/resourceslices", timeout=LIST_TIMEOUT_S))
    return cluster_inventory(claims.get("items") or [], slices.get("items") or [])


def _allocated_devices(claims: Iterable[Mapping[str, Any]]) -> set[tuple[str, str, str]]:
    held = set()
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or ():
            held.add((result.get("driver", ""), result.get("pool", ""), result.get("device", "")))
    return held


def _published_devices(
    slices: Iterable[Mapping[str, Any]],
) -> Iterable[tuple[str, str, Mapping[str, Any]]]:
    """(driver, pool, device) of the newest generation of each pool (an older generation's
    slices are on their way out)."""
    slices = list(slices)
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        spec = s.get("spec") or {}
        key = (spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""))
        newest[key] = max(newest.get(key, 0), int((spec.get("pool") or {}).get("generation", 0)))
    for s in slices:
        spec = s.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (spec.get("driver", ""), pool.get("name", ""))
        if int(pool.get("generation", 0)) != newest[key]:
            continue
        for device in spec.get("devices") or ():
            yield key[0], key[1], device
