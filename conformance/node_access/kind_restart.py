"""A kind node's reboot: its container restarted, keeping its network addresses."""

from __future__ import annotations

from typing import Any

from docker.errors import APIError

from conformance import docker_client


def _addresses(node: Any) -> dict[str, tuple[str, str]]:
    node.reload()
    networks = node.attrs["NetworkSettings"]["Networks"]
    return {
        name: (net.get("IPAddress") or "", net.get("GlobalIPv6Address") or "")
        for name, net in networks.items()
    }


def restart_keeping_addresses(node: Any, *, stop_timeout: int = 10) -> None:
    """Restart a kind node container: a reboot as far as the node can tell (its processes
    start anew and /run, a tmpfs, comes back empty). The node must keep its address: the
    kubelet runs with --node-ip of the old one. Docker hands a restarted container the next
    free address of its network, not its old one, once other containers came and went (as
    other clusters do on a shared host), so the old addresses are pinned before the start."""
    docker = docker_client.client()
    before = _addresses(node)
    node.stop(timeout=stop_timeout)
    for name, (ipv4, ipv6) in before.items():
        network = docker.networks.get(name)
        network.disconnect(node)
        try:
            network.connect(node, ipv4_address=ipv4 or None, ipv6_address=ipv6 or None)
        except APIError:
            # A network whose subnets Docker chose (kind's own `kind` network; the harness
            # creates its clusters on one of its own) refuses fixed addresses: connect the node
            # back as it was, and the check below says whether it kept its address.
            network.connect(node)
    node.start()
    after = _addresses(node)
    if after != before:
        raise RuntimeError(
            f"kind node container {node.name} came back with other addresses ({before} -> "
            f"{after}); its kubelet still uses the old one: recreate the cluster"
        )
