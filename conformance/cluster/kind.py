"""The kind cluster provider: create (online or offline image), reuse, status, delete."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import NoReturn

import tenacity
import urllib3
import yaml
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from conformance import docker_client, gobuild
from conformance.cache import build_lock, cache_root
from conformance.cluster import kind_block, kindconfig
from conformance.cluster.kind_create import (
    CreateWaits,
    create_args,
    failure_reason,
    host_load_scale,
    human_size,
    kubeadm_wait_patches,
    retry_line,
    tree_size,
)
from conformance.errors import ClusterError
from conformance.host import network, prepare
from conformance.images import components, nodeimage
from conformance.images.versions import NodeVersions
from conformance.kube import apply
from conformance.kube.client import K8sClients, clients_for
from conformance.kube.waits import WaitTimeout, wait_until
from conformance.model.cluster_block import DIGEST_LABEL, ClusterRequirements
from conformance.progress import Progress

REGISTRY_PROBE = ("registry-1.docker.io", 443)
DEFAULT_WORKERS = 2


def registry_reachable(timeout_s: float = 3.0) -> bool:
    try:
        with socket.create_connection(REGISTRY_PROBE, timeout=timeout_s):
            return True
    except OSError:
        return False


# A second try when kubeadm gives up on a busy host: with other clusters running tests on the
# same 2 cores, kubeadm's control-plane wait timed out once in CI, and the
# recreated cluster comes up like any other.
CREATE_ATTEMPTS = 2


def kubeconfig_path(name: str) -> Path:
    return cache_root() / "clusters" / name / "kubeconfig"


def kind_binary(v: NodeVersions, progress: Progress) -> Path:
    component = next(
        c for c in components.components(v, cache_root() / "gobuild") if c.name == "kind"
    )
    return gobuild.build(component, progress) / "kind"


@dataclass
class KindCluster:
    options: kindconfig.ClusterOptions
    kind: Path
    progress: Progress

    @property
    def name(self) -> str:
        return self.options.name

    @property
    def kubeconfig(self) -> Path:
        return kubeconfig_path(self.name)

    def _kind(
        self,
        *args: str,
        check: bool = True,
        timeout: float | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [str(self.kind), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **env} if env else None,
        )
        if check and result.returncode != 0:
            raise ClusterError(
                f"`kind {' '.join(args[:2])}` of {self.name} failed: "
                f"{failure_reason(result.stderr)}\n{_excerpt(result.stderr)}"
            )
        return result

    def exists(self) -> bool:
        out = self._kind("get", "clusters", check=False).stdout.split()
        return self.name in out

    def nodes(self) -> list[str]:
        return self._kind("get", "nodes", "--name", self.name).stdout.split()

    def clients(self) -> K8sClients:
        """Clients of their own, read from the kubeconfig now: a recreated cluster of the same
        name has new credentials and port, which a cached client would not know."""
        return clients_for(k8s_config.new_client_from_config(config_file=str(self.kubeconfig)))

    def ready_workers(self) -> int | None:
        """The worker count of a cluster whose every node is Ready; None if it cannot be
        reached, has no worker, or has a node that is not Ready."""
        if not self.kubeconfig.exists():
            return None
        try:
            k8s = self.clients()
            items = [k8s.to_dict(n) for n in k8s.core.list_node(_request_timeout=20).items]
        except (ApiException, urllib3.exceptions.HTTPError, OSError, k8s_config.ConfigException):
            return None
        workers = sum(1 for n in items if not _is_control_plane(n))
        return workers if workers and all(_node_ready(n) for n in items) else None

    def block_digests(self) -> set[str | None]:
        """The cluster-block digests its nodes carry (None: a node without the label)."""
        nodes = self.clients().core.list_node(_request_timeout=20).items
        return {(n.metadata.labels or {}).get(DIGEST_LABEL) for n in nodes}

    def export_logs(self, dest: Path) -> Path:
        dest.mkdir(parents=True, exist_ok=True)
        self._kind("export", "logs", str(dest), "--name", self.name, check=False, timeout=300)
        return dest

    def create(self, image: str, retain: bool, logs_dir: Path, waits: CreateWaits) -> None:
        self.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        config = kindconfig.kind_config(self.options)
        config["kubeadmConfigPatches"] = [
            *config.get("kubeadmConfigPatches", []),
            *kubeadm_wait_patches(self.options.kubernetes, waits.kubeadm_s),
        ]
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(yaml.safe_dump(config, sort_keys=False))
            config_file = f.name
        args = create_args(self.name, image, config_file, self.kubeconfig, waits)
        try:
            # One creation at a time on this host: two at once on 2 cores make kubeadm's
            # control-plane checks time out (seen when the e2e tiers start side by side).
            with (
                build_lock(
                    "kind-create", f"kind cluster {self.name}", self.progress.note, "being created"
                ),
                self.progress.stage(f"kind create cluster {self.name} ({image})"),
            ):
                # nodes join a network with both subnets configured, so a restarted node
                # can keep its address (host/network.py)
                env = {"KIND_EXPERIMENTAL_DOCKER_NETWORK": network.ensure_network()}
                self._kind(*args, timeout=waits.command_s, env=env)
            if self.options.offline:
                self.apply_node_network_rbac()
            with self.progress.stage("wait for nodes Ready and kube-proxy"):
                self.wait_ready(timeout_s=waits.nodes_ready_s)
        except subprocess.TimeoutExpired:
            self.fail(
                f"`kind create cluster` did not finish in {waits.command_s} s", retain, logs_dir
            )
        except ClusterError as exc:
            self.fail(exc.problem, retain, logs_dir, exc)
        finally:
            os.unlink(config_file)

    def fail(
        self, reason: str, retain: bool, logs_dir: Path, cause: BaseException | None = None
    ) -> NoReturn:
        """Export the failed nodes' logs, delete them unless kept, raise the one-line reason."""
        exported = self.export_logs(logs_dir / f"cluster-{self.name}-{int(time.time())}")
        if not retain:
            self.delete()
        hint = (
            "nodes kept (--retain): inspect with `docker exec`"
            if retain
            else "re-run with --retain to keep the failed nodes"
        )
        raise ClusterError(
            f"cluster {self.name} did not come up: {reason}",
            f"node logs ({human_size(tree_size(exported))}): {exported}; {hint}",
        ) from cause

    def apply_node_network_rbac(self) -> None:
        manifest = resources.files("conformance.cluster.assets").joinpath("node-network-rbac.yaml")
        documents = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
        try:
            apply.apply_all(self.clients().api_client, documents)
        except apply.ApplyError as exc:
            raise ClusterError(f"applying the node-network RBAC failed: {exc}") from None

    def readiness(self, k8s: K8sClients) -> tuple[bool, str]:
        """(every node Ready with a running kube-proxy, what was seen)."""
        items = [k8s.to_dict(n) for n in k8s.core.list_node(_request_timeout=20).items]
        pods = k8s.core.list_namespaced_pod(
            "kube-system", label_selector="k8s-app=kube-proxy", _request_timeout=20
        ).items
        ready = [n["metadata"]["name"] for n in items if _node_ready(n)]
        running = [p for p in pods if p.status and p.status.phase == "Running"]
        seen = (
            f"nodes ready {len(ready)}/{len(items)}, kube-proxy running {len(running)}/{len(pods)}"
        )
        done = (
            bool(items)
            and len(ready) == len(items) == 1 + self.options.workers
            and len(running) == len(items)
        )
        return done, seen

    def wait_ready(self, timeout_s: float) -> None:
        k8s = self.clients()
        try:
            wait_until(
                lambda: self.readiness(k8s),
                lambda state: state[0],
                describe="every node Ready with a running kube-proxy",
                timeout=timeout_s,
                interval=2.0,
                show=lambda state: state[1],
            )
        except WaitTimeout as exc:
            raise ClusterError(f"the nodes did not become ready: {exc}") from None

    def delete(self) -> None:
        self._kind(
            "delete",
            "cluster",
            "--name",
            self.name,
            "--kubeconfig",
            str(self.kubeconfig),
            check=False,
            timeout=300,
        )
        if self.kubeconfig.exists():
            self.kubeconfig.unlink()


def _is_control_plane(node: dict) -> bool:
    return kindconfig.CONTROL_PLANE_LABEL in (node.get("metadata", {}).get("labels") or {})


def check_reused_shape(name: str, workers: int, requested: int | None) -> None:
    """A reused cluster keeps its shape. An explicit worker count that differs is an error:
    re-creating the cluster to match would delete the user's cluster and what runs on it."""
    if requested is not None and requested != workers:
        raise ClusterError(
            f"cluster {name} exists with {workers} worker node(s), not {requested}",
            f"delete it first (dra-conformance cluster down --name {name}), pick another "
            "--name, or leave out --workers to use it as it is",
        )


def _node_ready(node: dict) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in node.get("status", {}).get("conditions", [])
    )


def _excerpt(text: str, lines: int = 25) -> str:
    """The informative part of a kind/kubeadm failure: error lines, not the Go stack trace."""
    kept = [
        ln
        for ln in (text or "").splitlines()
        if ln.strip()
        and not ln.startswith(("\t", " "))
        and ".go:" not in ln
        and not ln.startswith(("k8s.io/", "github.com/", "main.", "runtime."))
    ]
    return "\n".join(kept[-lines:])


def cluster_for(
    name: str,
    workers: int,
    kubernetes: str,
    offline: bool,
    progress: Progress,
    requirements: ClusterRequirements | None = None,
) -> KindCluster:
    v = NodeVersions.for_kubernetes(kubernetes)
    opts = kindconfig.ClusterOptions(
        name=name,
        workers=workers,
        kubernetes=kubernetes,
        offline=offline,
        cgroup_v1=kindconfig.host_uses_cgroup_v1(),
        restrict_oom_score_adj="CAP_SYS_RESOURCE" in prepare.missing_capabilities(),
        requirements=requirements or ClusterRequirements(),
    )
    try:
        kindconfig.kind_config(opts)  # a profile block at odds with the suite: before anything
    except kind_block.BlockConflict as exc:
        raise ClusterError(str(exc)) from None
    return KindCluster(opts, kind_binary(v, progress), progress)


def decide_offline(kubernetes: str, offline: bool | None) -> bool:
    """Explicit choice wins; a locally built node image means offline; else probe a registry."""
    if offline is not None:
        return offline
    if docker_client.image_exists(
        nodeimage.node_image_ref(NodeVersions.for_kubernetes(kubernetes))
    ):
        return True
    return not registry_reachable()


def up(
    name: str = "dra-conformance",
    workers: int | None = None,
    kubernetes: str = "v1.37.2",
    offline: bool | None = None,
    retain: bool = False,
    progress: Progress | None = None,
    logs_dir: Path | None = None,
    requirements: ClusterRequirements | None = None,
) -> KindCluster:
    """Create the cluster (`workers`: DEFAULT_WORKERS when None), or reuse a healthy one of
    the same name, whatever its worker count unless `workers` asks for one, and made with
    `requirements` (a profile's cluster block) unless None (no profile: taken as it is). A
    failed creation's node logs go under `logs_dir` (default: the cache's logs directory)."""
    progress = progress or Progress()
    logs_dir = logs_dir or cache_root() / "logs"
    prepare.prepare_host(progress, cache_root() / "logs")
    offline = decide_offline(kubernetes, offline)
    count = DEFAULT_WORKERS if workers is None else workers
    cluster = cluster_for(name, count, kubernetes, offline, progress, requirements)
    if cluster.exists():
        ready_workers = cluster.ready_workers()
        if ready_workers is not None:
            check_reused_shape(name, ready_workers, workers)
            if requirements is not None:
                kind_block.check_reused_block(name, cluster.block_digests(), requirements)
            progress.note(f"reusing healthy cluster {name} ({ready_workers} worker node(s))")
            return replace(cluster, options=replace(cluster.options, workers=ready_workers))
        progress.note(f"cluster {name} exists but is not healthy: deleting it")
        cluster.delete()
    if offline:
        image = nodeimage.build_node_image(NodeVersions.for_kubernetes(kubernetes), progress)
    else:
        image = f"kindest/node:{kubernetes}"
    cluster = replace(cluster, options=replace(cluster.options, offline=offline))
    scale, measured = host_load_scale()
    waits = CreateWaits(scale)
    if scale > 1:
        progress.note(
            f"a loaded host ({measured}): set-up waits {scale:.1f}x longer (kubeadm's health "
            f"checks {waits.kubeadm_s} s, nodes Ready {waits.nodes_ready_s} s)"
        )
    create_with_retry(lambda: cluster.create(image, retain, logs_dir, waits), retain, progress)
    return cluster


def create_with_retry(create: Callable[[], None], retain: bool, progress: Progress) -> None:
    """`create()`, once more after a ClusterError (CREATE_ATTEMPTS), unless the failed nodes
    are kept (--retain): those are there to be inspected, not replaced."""

    attempts = 1 if retain else CREATE_ATTEMPTS

    def once_more(retry_state: tenacity.RetryCallState) -> None:
        error = retry_state.outcome.exception()
        progress.note(retry_line(error, retry_state.attempt_number, attempts))

    tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        retry=tenacity.retry_if_exception_type(ClusterError),
        before_sleep=once_more,
        reraise=True,
    )(create)
