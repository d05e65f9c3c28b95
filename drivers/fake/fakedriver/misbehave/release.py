"""Misbehaviour background-release: devices whose release still runs after the unprepare
answered.

A driver that tears a device down asynchronously (a reset, a firmware call) and acknowledges
the unprepare at once has a device that is neither held nor free for a while. The kubelet
takes the acknowledgement as the end of the old claim: it marks the pod terminated, the claim
controller frees the claim, and the scheduler may hand the device to a new claim the kubelet
prepares seconds later. This book says which devices are still half-released at a moment, and
for which claim; it keeps no thread, the release simply ends at its deadline.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    claim: str  # "<namespace>/<name>" of the claim the device was unprepared from
    until: float  # monotonic seconds at which the release is done


class ReleaseBook:
    def __init__(self) -> None:
        self._releases: dict[str, Release] = {}

    def start(self, devices: Iterable[str], claim: str, until: float) -> None:
        for device in devices:
            self._releases[device] = Release(claim, until)

    def half_released(self, devices: Iterable[str], now: float) -> dict[str, str]:
        """Of `devices`, those still being released at `now`, with the claim they came from;
        finished releases are forgotten."""
        self._releases = {d: r for d, r in self._releases.items() if r.until > now}
        return {d: self._releases[d].claim for d in devices if d in self._releases}
