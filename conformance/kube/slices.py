"""The devices a driver publishes right now (the run context holds those of the run's start).

Scenarios that change what is published (withdraw a device, restart the driver, delete a node)
compare live snapshots; `DeviceSnapshot` is what "the same devices" means: same pools, device
names, attributes and capacities.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.kube.client import K8sClients
from conformance.model.devices import PublishedDevice, published_devices


def list_slices(k8s: K8sClients, driver: str, node: str | None = None) -> list[dict[str, Any]]:
    selector = f"spec.driver={driver}" + (f",spec.nodeName={node}" if node else "")
    return [k8s.to_dict(s) for s in k8s.resource.list_resource_slice(field_selector=selector).items]


def slices_of_node(k8s: K8sClients, node: str) -> list[dict[str, Any]]:
    """Every driver's ResourceSlices with spec.nodeName=node."""
    listing = k8s.resource.list_resource_slice(field_selector=f"spec.nodeName={node}")
    return [k8s.to_dict(s) for s in listing.items]


def current_devices(
    k8s: K8sClients, driver: str, node: str | None = None
) -> tuple[PublishedDevice, ...]:
    """The devices of the newest generation of each pool; with `node`, only that node's."""
    devices = published_devices(list_slices(k8s, driver), driver)
    return tuple(d for d in devices if node is None or d.node == node)


_Entry = tuple[tuple[tuple[str, Any], ...], tuple[tuple[str, str], ...]]  # attributes, capacity


@dataclass(frozen=True)
class DeviceSnapshot:
    """Comparable description of published devices: (pool, device) -> attributes, capacity."""

    devices: Mapping[tuple[str, str], _Entry]

    @classmethod
    def of(cls, devices: Iterable[PublishedDevice]) -> DeviceSnapshot:
        return cls(
            {
                (d.pool, d.name): (
                    tuple(sorted(d.attributes.items())),
                    tuple(sorted(d.capacity.items())),
                )
                for d in devices
            }
        )

    def differences(self, other: DeviceSnapshot) -> list[str]:
        """What changed from self to other, one line per device (empty: the same)."""
        out = []
        for key in sorted(self.devices.keys() - other.devices.keys()):
            out.append(f"{key[0]}/{key[1]}: no longer published")
        for key in sorted(other.devices.keys() - self.devices.keys()):
            out.append(f"{key[0]}/{key[1]}: newly published")
        for key in sorted(self.devices.keys() & other.devices.keys()):
            before, after = self.devices[key], other.devices[key]
            if before[0] != after[0]:
                changed = sorted(set(before[0]) ^ set(after[0]))
                out.append(f"{key[0]}/{key[1]}: attributes changed: {changed}")
            if before[1] != after[1]:
                out.append(f"{key[0]}/{key[1]}: capacity {dict(before[1])} -> {dict(after[1])}")
        return out
