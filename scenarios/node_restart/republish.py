"""After a kubelet or node restart: the restarted kubelet deletes its node's ResourceSlices, and
the driver must publish the same devices again in new ones (DRA-KUBELET-001, DRA-REBOOT-*)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.kube import slices, waits


def slice_uids(k8s: Any, driver: str, node: str) -> set[str]:
    return {
        s["metadata"]["uid"]
        for s in slices.slices_of_node(k8s, node)
        if s["spec"].get("driver") == driver
    }


@dataclass(frozen=True)
class Republish:
    """The node's slices and devices before a restart, to await their republication."""

    k8s: Any
    driver: str
    node: str
    devices: slices.DeviceSnapshot
    old_slices: frozenset[str]

    @classmethod
    def before_restart(cls, k8s: Any, driver: str, node: str) -> Republish:
        devices = slices.DeviceSnapshot.of(slices.current_devices(k8s, driver, node))
        assert devices.devices, f"{driver} publishes no devices for node {node}"
        return cls(k8s, driver, node, devices, frozenset(slice_uids(k8s, driver, node)))

    def wait(self, *, after: str, timeout: float) -> None:
        """Until no slice from before is left and the same devices are published again."""
        old, before = self.old_slices, self.devices
        waits.wait_until(
            lambda: (
                slice_uids(self.k8s, self.driver, self.node),
                slices.DeviceSnapshot.of(slices.current_devices(self.k8s, self.driver, self.node)),
            ),
            lambda now: not (now[0] & old) and not before.differences(now[1]),
            describe=f"{self.driver} to publish the same devices for {self.node} again in new "
            f"ResourceSlices {after}",
            timeout=timeout,
            show=lambda now: {
                "slices left from before the restart": sorted(now[0] & old),
                "device differences": before.differences(now[1]),
            },
        )
