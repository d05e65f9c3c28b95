"""Proof that a driver publishes its node's devices again, in ResourceSlices it wrote itself.

After a kubelet or node restart the restarted kubelet deletes its node's ResourceSlices, and the
driver must publish the same devices again in new ones (DRA-KUBELET-001, DRA-REBOOT-*). After a
restart of the driver's plugin pod alone (DRA-LOSS-006) the old pod's slices may stay, and a
driver that writes nothing when they already match (the upstream ResourceSlice controller, the
fake driver) is right to leave them: slices left behind look exactly like republished ones. So
`wiped` deletes them, as the kubelet does when a plugin stays away: only the running plugin can
bring them back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from conformance.kube import slices, waits
from conformance.observe.steps import step


def driver_slices(k8s: Any, driver: str, node: str) -> list[dict[str, Any]]:
    return [s for s in slices.slices_of_node(k8s, node) if s["spec"].get("driver") == driver]


def slice_uids(k8s: Any, driver: str, node: str) -> set[str]:
    return {s["metadata"]["uid"] for s in driver_slices(k8s, driver, node)}


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

    def wiped(self) -> Republish:
        """Delete the driver's slices of the node now (each only if it is still the one
        listed); the Republish to wait on counts them as old too."""
        found = driver_slices(self.k8s, self.driver, self.node)
        with step(f"delete the {len(found)} ResourceSlice(s) of {self.driver} on {self.node}"):
            for item in found:
                meta = item["metadata"]
                try:
                    self.k8s.resource.delete_resource_slice(
                        meta["name"],
                        body=k8s_client.V1DeleteOptions(
                            preconditions=k8s_client.V1Preconditions(uid=meta["uid"])
                        ),
                    )
                except ApiException as exc:
                    if exc.status not in (404, 409):  # gone, or replaced: new either way
                        raise
        return replace(self, old_slices=self.old_slices | {s["metadata"]["uid"] for s in found})

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
                "slices left from before": sorted(now[0] & old),
                "device differences": before.differences(now[1]),
            },
        )
