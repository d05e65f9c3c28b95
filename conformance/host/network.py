"""The Docker network the harness's kind nodes join.

kind creates its `kind` network with an IPv6 subnet of its own and lets Docker pick the IPv4
one; Docker then refuses to connect a container with a fixed IPv4 address to it ("user
specified IP address is supported only when connecting to networks with user configured
subnets"), and a node restart needs exactly that (`kube.nodes.restart_node_container` keeps the
node's address, which its kubelet's --node-ip names). So the harness creates a network of its
own with both subnets configured and hands it to kind (KIND_EXPERIMENTAL_DOCKER_NETWORK).
"""

from __future__ import annotations

import docker.errors
import docker.types

from conformance import docker_client
from conformance.cache import build_lock
from conformance.errors import ClusterError

NETWORK = "dra-conformance"
# Tried in turn: Docker refuses a subnet that overlaps one of its other networks.
IPV4_SUBNETS = ("172.29.0.0/16", "172.30.0.0/16", "172.31.0.0/16", "10.229.0.0/16", "10.231.0.0/16")
IPV6_SUBNET = "fc00:d7a:c0f:1::/64"
# what kind sets on the network it creates itself
OPTIONS = {
    "com.docker.network.bridge.enable_ip_masquerade": "true",
    "com.docker.network.driver.mtu": "1500",
}


def ensure_network() -> str:
    """The network's name, created on first use (one process at a time)."""
    client = docker_client.client()
    with build_lock("docker-network"):
        try:
            client.networks.get(NETWORK)
            return NETWORK
        except docker.errors.NotFound:
            pass
        refused = []
        for subnet in IPV4_SUBNETS:
            pools = [docker.types.IPAMPool(subnet=s) for s in (subnet, IPV6_SUBNET)]
            try:
                client.networks.create(
                    NETWORK,
                    driver="bridge",
                    enable_ipv6=True,
                    ipam=docker.types.IPAMConfig(pool_configs=pools),
                    options=OPTIONS,
                    labels={"dra-conformance.io/owner": "dra-conformance"},
                )
                return NETWORK
            except docker.errors.APIError as exc:
                refused.append(f"{subnet}: {exc.explanation or exc}")
    raise ClusterError(
        f"could not create the Docker network {NETWORK}: every subnet was refused "
        f"({'; '.join(refused)})",
        f"remove unused Docker networks (docker network prune) or free one of {IPV4_SUBNETS}",
    )
