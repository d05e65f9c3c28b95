"""Where a node-level scenario acts: the profile nodes that hold node-local devices of a kind.

Drain, cordon, taint-a-node and driver-restart scenarios need devices published for one node
(ResourceSlice spec.nodeName or a device's own nodeName). Devices of network-attached pools
(nodeSelector / allNodes) belong to no node and are left out.
"""

from __future__ import annotations

from collections.abc import Iterable

from conformance.model.devices import PublishedDevice
from conformance.run.context import RunContext
from conformance.run.lease import DeviceLease


class PlacementError(AssertionError):
    """The cluster cannot host the scenario (too few nodes or devices)."""


def node_local_devices(
    context: RunContext, kind: str = "default"
) -> dict[str, list[PublishedDevice]]:
    """Profile node -> its devices of `kind` (from the slices read at the start of the run)."""
    devices = context.devices_of_kind(kind)
    out: dict[str, list[PublishedDevice]] = {n: [] for n in context.nodes}
    for device in devices:
        if device.node in out:
            out[device.node].append(device)
    return out


def sole_node(context: RunContext, kind: str) -> str | None:
    """The node that holds every device of `kind`, if one does (a lease of all of them is then
    pinned there, as the broker's `pin_candidates`); None if they are spread, not node-local,
    or absent."""
    devices = context.devices_of_kind(kind) if kind in context.device_sets else ()
    nodes = {d.node for d in devices}
    return next(iter(nodes)) if len(nodes) == 1 and None not in nodes else None


def whole_node_candidates(context: RunContext, kind: str, at_least: int) -> list[str]:
    """The nodes a test can lease whole (at least `at_least` node-local devices of `kind`),
    fewest devices first: disrupting them is cheapest."""
    by_node = node_local_devices(context, kind)
    fit = [n for n, devices in by_node.items() if len(devices) >= at_least]
    return sorted(fit, key=lambda n: (len(by_node[n]), n))


def pick_node(
    context: RunContext,
    kind: str = "default",
    *,
    at_least: int = 1,
    others_at_least: int = 0,
    exclude: Iterable[str] = (),
    lease: DeviceLease | None = None,
) -> str:
    """The node with the fewest (but at least `at_least`) devices of `kind` whose other
    profile nodes together hold at least `others_at_least` of them (room for replacements).
    Fewest, so scenarios that taint or withdraw every device of the node stay cheap.

    With a node lease (`@pytest.mark.dra_node_exclusive`), the leased node, which must qualify:
    a test disrupts only the node it leased."""
    by_node = node_local_devices(context, kind)
    excluded = set(exclude)
    if lease is not None:
        if lease.node is None:
            raise PlacementError(
                f"{lease.holder}: pick_node(lease=...) needs a node lease; "
                "mark the test @pytest.mark.dra_node_exclusive"
            )
        excluded |= set(by_node) - {lease.node}
    total = sum(len(v) for v in by_node.values())
    candidates = [
        (len(devs), node)
        for node, devs in by_node.items()
        if node not in excluded and len(devs) >= at_least and total - len(devs) >= others_at_least
    ]
    if not candidates:
        raise PlacementError(
            f"no profile node has >= {at_least} node-local device(s) of kind {kind!r} while the "
            f"other nodes hold >= {others_at_least}; devices per node: "
            + ", ".join(f"{n}={len(v)}" for n, v in sorted(by_node.items()))
        )
    return min(candidates)[1]


def devices_on(context: RunContext, node: str, kind: str = "default") -> list[PublishedDevice]:
    return list(node_local_devices(context, kind).get(node, []))
