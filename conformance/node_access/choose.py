"""The run's way to its nodes, chosen once from the cluster and the profile: the profile's
`nodeCommands` first (a vendor's own word), then the node containers of a kind cluster the
harness made, then a privileged pod where the profile allows one."""

from __future__ import annotations

from collections.abc import Callable

from conformance.kube.client import K8sClients, load_clients
from conformance.model.profile import Profile
from conformance.node_access.chain import FirstAvailable
from conformance.node_access.commands import ProfileNodeCommands
from conformance.node_access.interface import NodeAccess
from conformance.node_access.kind import KindNodeContainers
from conformance.node_access.pod import PrivilegedPods
from conformance.run.context import ClusterInfo, RunContext


def choose_node_access(
    cluster: ClusterInfo,
    profile: Profile,
    *,
    clients: Callable[[], K8sClients],
    workload_image: str,
    run_id: str,
    timeout_scale: float = 1.0,
) -> NodeAccess:
    commands = profile.node_commands
    not_kind = (
        ""
        if cluster.provider == "kind" and cluster.node_containers
        else f"this {cluster.provider} cluster has no kind node containers"
    )
    return FirstAvailable(
        [
            ProfileNodeCommands(commands, cluster.kubeconfig, timeout_scale),
            KindNodeContainers(cluster.name, cluster.node_containers, not_kind),
            PrivilegedPods(
                clients,
                commands.privileged_pod_namespace,
                workload_image,
                run_id,
                commands.timeout * timeout_scale,
            ),
        ]
    )


def node_access_for(context: RunContext) -> NodeAccess:
    """The node access of a run (the same in every worker: it depends on the context only)."""
    cluster = context.cluster
    return choose_node_access(
        cluster,
        context.profile,
        clients=lambda: load_clients(cluster.kubeconfig, cluster.context),
        workload_image=context.workload_image,
        run_id=context.run_id,
        timeout_scale=context.timeout_scale,
    )
