"""Images loaded into the nodes of a kind cluster (`kind load docker-image`), each node once:
the harness's workload image and whatever image a driver install built here."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from conformance import docker_client
from conformance.cache import build_lock
from conformance.cluster import kind
from conformance.cluster.kind import KindCluster
from conformance.errors import BuildError
from conformance.images.harness import build_workload_image
from conformance.progress import Progress


def node_has_image(node: str, ref: str) -> bool:
    container = docker_client.client().containers.get(node)
    code, out = container.exec_run(["ctr", "-n", "k8s.io", "images", "ls", "-q", f"name=={ref}"])
    return code == 0 and ref in out.decode()


def every_node_has_image(cluster_name: str, ref: str) -> bool:
    """Whether the kind cluster `cluster_name` exists and each of its nodes has `ref` already
    (a load would skip them all)."""
    nodes = docker_client.client().containers.list(
        filters={"label": f"io.x-k8s.kind.cluster={cluster_name}"}
    )
    return bool(nodes) and all(node_has_image(n.name, ref) for n in nodes)


def load_into_cluster(
    kind_binary: Path,
    cluster: str,
    nodes: list[str],
    ref: str,
    progress: Progress,
    ensure_local: Callable[[], None] | None = None,
) -> None:
    """Load `ref` into the nodes that lack it; `ensure_local` first puts it into the local
    engine (a pull), called only when some node needs it."""
    with build_lock(f"load-{cluster}", f"{ref}", progress.note, f"being loaded into {cluster}"):
        missing = [n for n in nodes if not node_has_image(n, ref)]
        if not missing:
            return
        if ensure_local is not None:
            ensure_local()
        # The stage ends inside the check: `done` only after kind said the load worked.
        with progress.stage(f"load {ref} into {len(missing)} node(s)"):
            result = subprocess.run(
                [
                    str(kind_binary),
                    "load",
                    "docker-image",
                    ref,
                    "--name",
                    cluster,
                    "--nodes",
                    ",".join(missing),
                ],
                capture_output=True,
                text=True,
            )
            check_load(ref, cluster, result)


def check_load(ref: str, cluster: str, result: subprocess.CompletedProcess[str]) -> None:
    if result.returncode != 0:
        tail = (result.stderr or result.stdout or "").strip()[-1500:] or "no output"
        raise BuildError(
            f"kind load docker-image {ref} into cluster {cluster} failed:\n{tail}",
            f"check that the image exists (docker image inspect {ref}) and the nodes run "
            f"(dra-conformance cluster status --name {cluster})",
        )


def workload_image(cluster_name: str | None = None, progress: Progress | None = None) -> str:
    """The workload image, built when missing and loaded into the kind cluster `cluster_name`
    (None: an existing cluster, which must already have it — see --dra-workload-image; the
    run's preflight, conformance/plugin/preflight.py, proves it does). `cluster up` and
    `driver install` on a kind cluster load it, so a later `run --cluster existing` finds it."""
    progress = progress or Progress()
    ref = build_workload_image(progress)
    if cluster_name:
        load_into_kind(cluster_name, ref, progress)
    return ref


def load_workload_image(cluster: KindCluster, progress: Progress) -> str:
    """Build the workload image when missing and load it into every node of `cluster`."""
    ref = build_workload_image(progress)
    load_into_cluster(cluster.kind, cluster.name, cluster.nodes(), ref, progress)
    return ref


def load_into_kind(
    cluster_name: str,
    ref: str,
    progress: Progress,
    ensure_local: Callable[[], None] | None = None,
) -> None:
    """Load `ref` into every node of the kind cluster created by dra-conformance."""
    cluster = kind.cluster_for(cluster_name, 1, "v1.37.2", True, progress)
    load_into_cluster(cluster.kind, cluster.name, cluster.nodes(), ref, progress, ensure_local)
