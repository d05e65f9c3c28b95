"""When waiting for a pod to run is pointless (pure, no cluster): what ends a wait for Running
at once, with the reason, instead of at its timeout.

- the pod reached phase Succeeded or Failed;
- the kubelet recorded a FailedPrepareDynamicResources warning event for this pod (the v1.37.2
  kubelet's message: "Failed to prepare dynamic resources: <error>"): a driver that refused to
  prepare is the failure a conformance wait reports, not a slow driver;
- a claim of the pod is allocated from a pool that no ResourceSlice publishes any more, on two
  reads in a row (one read may fall between a driver's delete and create of a republish): the
  kubelet cannot prepare a device of a pool the driver gave up.

Scenarios that expect a passing prepare failure (a fault they clear, a driver or kubelet that
is coming back) wait with the check off (`PodOps.wait_running(abort_on_prepare_failure=False)`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.kube import state

PREPARE_FAILED = "FailedPrepareDynamicResources"  # the kubelet's event reason (v1.37.2)


@dataclass(frozen=True, order=True)
class PoolRef:
    driver: str
    pool: str

    def __str__(self) -> str:
        return f"pool {self.pool} of driver {self.driver}"


def prepare_failures(events: Iterable[Mapping[str, Any]], pod_uid: str | None) -> list[dict]:
    """Warning events with reason FailedPrepareDynamicResources about this pod. An event about
    an earlier pod of the same name (another UID) does not count."""
    out = []
    for event in events:
        involved = event.get("involvedObject") or {}
        if event.get("type") != "Warning" or event.get("reason") != PREPARE_FAILED:
            continue
        if pod_uid and involved.get("uid") and involved["uid"] != pod_uid:
            continue
        out.append(dict(event))
    return out


def pod_claim_names(pod: Mapping[str, Any]) -> dict[str, str]:
    """pod claim entry name -> ResourceClaim name (generated ones from
    pod.status.resourceClaimStatuses; not generated yet: left out)."""
    generated = {
        s["name"]: s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
    }
    out: dict[str, str] = {}
    for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
        name = entry.get("resourceClaimName") or generated.get(entry["name"])
        if name:
            out[entry["name"]] = name
    return out


def claim_pools(claims: Mapping[str, Mapping[str, Any] | None]) -> dict[str, set[PoolRef]]:
    """ResourceClaim name -> the pools its allocation results name (unallocated: none)."""
    return {
        name: {PoolRef(r.driver, r.pool) for r in state.allocation_results(claim)}
        for name, claim in claims.items()
        if claim is not None and state.is_allocated(claim)
    }


def published_pools(slices: Iterable[Mapping[str, Any]]) -> set[PoolRef]:
    return {
        PoolRef((s.get("spec") or {}).get("driver") or "", (s["spec"].get("pool") or {})["name"])
        for s in slices
        if ((s.get("spec") or {}).get("pool") or {}).get("name")
    }


def missing_pools(
    allocated: Mapping[str, Iterable[PoolRef]], published: set[PoolRef]
) -> dict[PoolRef, list[str]]:
    """Pool -> the claims allocated from it, for pools not published."""
    out: dict[PoolRef, list[str]] = {}
    for claim, pools in sorted(allocated.items()):
        for pool in sorted(pools):
            if pool not in published:
                out.setdefault(pool, []).append(claim)
    return out


@dataclass
class PoolWatch:
    """Remembers which pools were missing at the previous read, so a pool is given up only when
    it is missing twice in a row."""

    missing_before: set[PoolRef] = field(default_factory=set)

    def observe(
        self, allocated: Mapping[str, Iterable[PoolRef]], published: set[PoolRef]
    ) -> str | None:
        missing = missing_pools(allocated, published)
        gone = {p: claims for p, claims in missing.items() if p in self.missing_before}
        self.missing_before = set(missing)
        if not gone:
            return None
        return "; ".join(
            f"{'claims' if len(claims) > 1 else 'claim'} {', '.join(claims)} "
            f"{'are' if len(claims) > 1 else 'is'} allocated from {pool}, which no "
            "ResourceSlice publishes any more"
            for pool, claims in sorted(gone.items())
        )


def hopeless_reason(
    pod: Mapping[str, Any] | None,
    failures: Iterable[Mapping[str, Any]] = (),
    pools_gone: str | None = None,
) -> str | None:
    """Why the pod will not reach Running by waiting longer, or None."""
    phase = state.pod_phase(pod)
    if phase in ("Succeeded", "Failed"):
        return f"the pod reached phase {phase}"
    failures = list(failures)
    if failures:
        return (
            f"the kubelet could not prepare the pod's claims ({PREPARE_FAILED}): "
            f"{failures[-1].get('message')}"
        )
    return pools_gone
