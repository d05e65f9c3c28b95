"""Cluster providers behind one call: `kind` (created and owned by the run), `existing` (a
kubeconfig) or `in-cluster` (the pod's service account)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from conformance.errors import ClusterError
from conformance.model.cluster_block import ClusterRequirements
from conformance.progress import Progress


@dataclass
class ClusterHandle:
    kubeconfig: str
    context: str | None
    name: str
    provisioned: bool
    provider: str = "kind"
    # node -> its Docker container (kind); conformance.node_access reaches nodes through them
    node_containers: dict[str, str] = field(default_factory=dict)
    # False where nothing can be built or installed from here (a pod has no Docker or helm):
    # the driver is expected installed, as Sonobuoy tests what the cluster runs.
    installs_driver: bool = True
    _keep: bool = True

    def teardown(self) -> None:
        if self.provisioned and not self._keep:
            from conformance.cluster import kind

            kind.cluster_for(self.name, 1, "v1.37.2", True, Progress()).delete()


def provision(
    kind: str = "kind",
    name: str = "dra-conformance",
    kubeconfig: str | None = None,
    context: str | None = None,
    keep: bool = True,
    workers: int | None = None,
    kubernetes: str = "v1.37.2",
    offline: bool | None = None,
    progress: Progress | None = None,
    requirements: ClusterRequirements | None = None,
) -> ClusterHandle:
    """`kind`: create or reuse the named kind cluster. `existing`: use the given kubeconfig.

    `in-cluster`: the pod's service account (conformance/cluster/in_cluster.py); like
    `existing`, its nodes are reached only as the profile says (conformance.node_access).

    `requirements`: the profile's cluster block, applied to a kind cluster made here; a
    reused one must have been made with it (conformance.cluster.kind_block).

    `keep` defaults to True: a reused cluster makes the next run fast; `--dra-keep-cluster`
    false deletes it at the end of the run.
    """
    if kind == "existing":
        path = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube/config")
        if not Path(path).exists():
            raise ClusterError(
                f"kubeconfig {path} does not exist",
                "pass --kubeconfig PATH (and --context NAME) for an existing "
                "cluster, or let the run make a kind cluster (--cluster kind)",
            )
        return ClusterHandle(
            kubeconfig=path,
            context=context,
            name=context or "existing",
            provisioned=False,
            provider="existing",
        )
    if kind == "in-cluster":
        from conformance.cluster import in_cluster

        return ClusterHandle(
            kubeconfig=str(in_cluster.write_kubeconfig()),
            context=None,
            name="in-cluster",
            provisioned=False,
            provider="in-cluster",
            installs_driver=False,
        )
    if kind != "kind":
        raise ClusterError(f"unknown cluster provider {kind!r}", "use kind, existing or in-cluster")
    from conformance.cluster import kind as kind_provider

    cluster = kind_provider.up(
        name=name,
        workers=workers,
        kubernetes=kubernetes,
        offline=offline,
        progress=progress,
        requirements=requirements,
    )
    nodes = cluster.nodes()
    return ClusterHandle(
        kubeconfig=str(cluster.kubeconfig),
        context=None,
        name=name,
        provisioned=True,
        provider="kind",
        node_containers={n: n for n in nodes},
        _keep=keep,
    )
