"""In-place upgrade of a kind cluster to another Kubernetes version, offline, the way a platform
team upgrades: the new version's images staged on every node first (nothing is pulled), then the
control plane (`kubeadm upgrade apply`, then its kubelet), then node by node: drain,
`kubeadm upgrade node`, the new kubelet, uncordon.

The binaries and images come from the offline build of the target version (the same Go build
and component images as its node image). Feature gates and API versions are switched to the
target release's set (conformance/images/releases.py) in the cluster's kubeadm, kubelet and
kube-proxy configuration before anything restarts: a kubelet or API server refuses a gate its
release no longer has.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes.client.exceptions import ApiException

from conformance import docker_client
from conformance.errors import ClusterError
from conformance.images import components, nodeimage, releases
from conformance.images.tarbuild import TarBuilder
from conformance.images.versions import NodeVersions
from conformance.kube import drain as kube_drain
from conformance.kube.client import K8sClients
from conformance.kube.field_manager import FIELD_MANAGER
from conformance.kube.waits import WaitTimeout, wait_until
from conformance.progress import Progress

STAGE_DIR = "/kind/upgrade"
BINARIES = ("kubeadm", "kubelet", "kubectl")
KIND_CLUSTER_LABEL = "io.x-k8s.kind.cluster"
KIND_ROLE_LABEL = "io.x-k8s.kind.role"
# CoreDNS is not installed offline (kindconfig skips the phase at init); its upgrade would
# create a Deployment whose image no node has.
SKIPPED_PHASES = "addon/coredns"
APPLY_TIMEOUT_S = 900


def kind_nodes(cluster: str) -> tuple[str, list[str]]:
    """(control-plane node, worker nodes sorted) of a kind cluster, from its containers."""
    containers = docker_client.client().containers.list(
        all=True, filters={"label": f"{KIND_CLUSTER_LABEL}={cluster}"}
    )
    roles = {c.name: c.labels.get(KIND_ROLE_LABEL, "") for c in containers}
    planes = sorted(n for n, r in roles.items() if r == "control-plane")
    if len(planes) != 1:
        raise ClusterError(
            f"kind cluster {cluster} has {len(planes)} control-plane nodes",
            "the in-place upgrade handles a cluster with one control-plane node",
        )
    return planes[0], sorted(n for n, r in roles.items() if r == "worker")


def kubelet_version(k8s: K8sClients, node: str) -> str:
    return k8s.core.read_node(node).status.node_info.kubelet_version


def rewrite_extra_args(args: Any, values: dict[str, str]) -> Any:
    """kubeadm extraArgs (v1beta4: a list of {name, value}; v1beta3: a map) with `values`
    replacing the same names; an empty value drops the argument."""
    if isinstance(args, list):
        kept = [a for a in args if a.get("name") not in values]
        return kept + [{"name": n, "value": v} for n, v in sorted(values.items()) if v]
    merged = {k: v for k, v in (args or {}).items() if k not in values}
    merged.update({n: v for n, v in values.items() if v})
    return merged


def target_gates(version: str) -> dict[str, bool]:
    return {g: True for g in releases.release_for(version).feature_gates()}


def rewrite_cluster_configuration(text: str, version: str) -> str:
    """kubeadm's ClusterConfiguration with the target release's gates and runtime config."""
    config = yaml.safe_load(text)
    release = releases.release_for(version)
    gates = ",".join(f"{g}=true" for g in sorted(release.feature_gates()))
    runtime = ",".join(f"{k}={v}" for k, v in sorted(release.runtime_config().items()))
    for component, values in (
        ("apiServer", {"feature-gates": gates, "runtime-config": runtime}),
        ("controllerManager", {"feature-gates": gates}),
        ("scheduler", {"feature-gates": gates}),
    ):
        section = config.setdefault(component, {}) or {}
        section["extraArgs"] = rewrite_extra_args(section.get("extraArgs"), values)
        config[component] = section
    # kubernetesVersion stays: `kubeadm upgrade apply` sets it once the control plane is up
    return yaml.safe_dump(config, sort_keys=False)


def rewrite_component_config(text: str, version: str) -> str:
    """A KubeletConfiguration or KubeProxyConfiguration with the target release's gates."""
    config = yaml.safe_load(text)
    config["featureGates"] = target_gates(version)
    return yaml.safe_dump(config, sort_keys=False)


# ConfigMap (namespace kube-system), data key, rewrite
CONFIG_REWRITES: tuple[tuple[str, str, Callable[[str, str], str]], ...] = (
    ("kubeadm-config", "ClusterConfiguration", rewrite_cluster_configuration),
    ("kubelet-config", "kubelet", rewrite_component_config),
    ("kube-proxy", "config.conf", rewrite_component_config),
)


@dataclass
class KindUpgrade:
    """Upgrade the kind cluster `cluster` to `version`, one step at a time (a rehearsal checks
    the cluster between steps)."""

    cluster: str
    version: str
    k8s: K8sClients
    progress: Progress
    logs_dir: Path
    run_id: str = "upgrade"
    control_plane: str = ""
    workers: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:  # an unknown release fails here, before any change
            releases.release_for(self.version)
        except ValueError as exc:
            raise ClusterError(str(exc), "pass --to one of the supported versions") from None
        self.control_plane, self.workers = kind_nodes(self.cluster)
        if not self.workers:
            raise ClusterError(f"kind cluster {self.cluster} has no nodes", "create it first")

    def _exec(self, node: str, *cmd: str, what: str, timeout_s: float = 600) -> str:
        container = docker_client.client().containers.get(node)
        wrapped = ["timeout", str(int(timeout_s)), *cmd]
        code, output = container.exec_run(wrapped)
        text = output.decode(errors="replace")
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        log = self.logs_dir / f"upgrade-{node}-{what.replace(' ', '-')}.log"
        log.write_text(f"$ {' '.join(cmd)}\n{text}")
        if code != 0:
            tail = "\n".join(text.splitlines()[-15:])
            raise ClusterError(
                f"{what} on node {node} exited {code}" + (" (timed out)" if code == 124 else ""),
                f"last lines:\n{tail}\nfull output: {log}",
            )
        return text

    @contextlib.contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        with self.progress.stage(name):
            yield
        self.timings[name] = time.monotonic() - start

    # --- step 1: everything the new version needs, on every node ---------------------------

    def stage(self) -> None:
        """Copy the new binaries and images to every node and import the images; switch the
        cluster's configuration to the new release's gates. Nothing restarts yet."""
        v = NodeVersions.for_kubernetes(self.version)
        with self._timed(f"build or reuse Kubernetes {self.version} binaries and images"):
            images = nodeimage.component_images(v, self.progress)
            bins = components.build_all(v, self.progress)["kubernetes"]
        with tempfile.TemporaryDirectory() as tmp:
            archive = Path(tmp) / "images.tar"
            nodeimage.save_images(images, archive)
            tar = TarBuilder(tempfile.TemporaryFile())  # noqa: SIM115 - the builder owns it
            for name in BINARIES:
                tar.add_file(f"{STAGE_DIR.lstrip('/')}/{name}", bins / name, 0o755)
            tar.add_file(f"{STAGE_DIR.lstrip('/')}/images.tar", archive, 0o644)
            data = tar.close()
            for node in [self.control_plane, *self.workers]:
                with self._timed(f"stage {self.version} on node {node}"):
                    data.seek(0)
                    if not docker_client.client().containers.get(node).put_archive("/", data):
                        raise ClusterError(f"copying the {self.version} files to {node} failed")
                    self._exec(
                        node,
                        "ctr",
                        "--namespace=k8s.io",
                        "images",
                        "import",
                        "--label=io.cri-containerd.pinned=pinned",
                        "--all-platforms",
                        "--digests",
                        f"{STAGE_DIR}/images.tar",
                        what="import images",
                    )
                    self._exec(node, "rm", "-f", f"{STAGE_DIR}/images.tar", what="clean up")
        with self._timed("switch the cluster configuration to the new release's gates"):
            self.rewrite_configs()

    def rewrite_configs(self) -> None:
        for name, key, rewrite in CONFIG_REWRITES:
            cm = self.k8s.core.read_namespaced_config_map(name, "kube-system")
            if not cm.data or key not in cm.data:
                continue  # kube-proxy's ConfigMap is absent when kube-proxy is off
            body = {"data": {key: rewrite(cm.data[key], self.version)}}
            self.k8s.core.patch_namespaced_config_map(
                name, "kube-system", body, field_manager=FIELD_MANAGER
            )

    # --- step 2: the control plane ----------------------------------------------------------

    def upgrade_control_plane(self) -> None:
        node = self.control_plane
        self._install_binary(node, "kubeadm")
        flags = ["--yes", "--ignore-preflight-errors=all", "--certificate-renewal=false"]
        flags.append(f"--skip-phases={SKIPPED_PHASES}")
        if "-" in self.version:  # a pre-release such as v1.38.0-beta.0
            flags.append("--allow-experimental-upgrades")
        with self._timed(f"kubeadm upgrade apply {self.version} on {node}"):
            self._exec(
                node,
                "kubeadm",
                "upgrade",
                "apply",
                self.version,
                *flags,
                what="kubeadm upgrade apply",
                timeout_s=APPLY_TIMEOUT_S,
            )
        self._new_kubelet(node)

    # --- step 3: each worker ----------------------------------------------------------------

    def drain(self, node: str, timeout_s: float = 300) -> kube_drain.DrainResult:
        with self._timed(f"drain node {node}"):
            return kube_drain.drain(self.k8s, node, run_id=self.run_id, timeout=timeout_s)

    def upgrade_node(self, node: str) -> None:
        """`kubeadm upgrade node` and the new kubelet on a (drained) node; uncordons it."""
        self._install_binary(node, "kubeadm")
        with self._timed(f"kubeadm upgrade node on {node}"):
            # preflight as for apply: a cgroup v1 host is refused unless its errors are ignored
            # (the kubelet configuration keeps failCgroupV1: false, kindconfig.py)
            self._exec(
                node,
                "kubeadm",
                "upgrade",
                "node",
                "--ignore-preflight-errors=all",
                what="kubeadm upgrade node",
            )
        self._new_kubelet(node)
        kube_drain.uncordon(self.k8s, node)

    def upgrade_all_workers(self) -> None:
        for node in self.workers:
            self.drain(node)
            self.upgrade_node(node)

    # --- shared -----------------------------------------------------------------------------

    def _install_binary(self, node: str, name: str) -> None:
        # a rename, so a running binary is replaced, not written over
        target = f"/usr/bin/{name}"
        self._exec(
            node,
            "sh",
            "-c",
            f"cp {STAGE_DIR}/{name} {target}.new && mv -f {target}.new {target}",
            what=f"install {name}",
        )

    def _new_kubelet(self, node: str) -> None:
        with self._timed(f"kubelet {self.version} on {node}"):
            self._install_binary(node, "kubelet")
            self._install_binary(node, "kubectl")
            self._exec(node, "systemctl", "daemon-reload", what="daemon-reload")
            self._exec(node, "systemctl", "restart", "kubelet", what="restart kubelet")
            self.wait_node(node)
        if node == self.control_plane:
            with self._timed("control plane settles under the new kubelet"):
                self.wait_control_plane_settled()

    def wait_control_plane_settled(self, quiet_s: float = 30.0, timeout_s: float = 300) -> None:
        """The new kubelet recreates the static pods (their hash changed with the version):
        the API server goes away once more a few seconds after the kubelet came back (seen
        in the rehearsal: a drain's first call then failed). Wait until the control plane's
        pods are Ready and the API server has answered without a break for `quiet_s`."""
        start = time.monotonic()
        last_break = start

        def read() -> dict[str, Any]:
            nonlocal last_break
            try:
                pods = self.k8s.core.list_namespaced_pod(
                    "kube-system", field_selector=f"spec.nodeName={self.control_plane}"
                ).items
            except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
                last_break = time.monotonic()
                return {"error": str(exc).splitlines()[0][:200], "quiet_s": 0}
            static = {
                p.metadata.name: all(c.ready for c in p.status.container_statuses or ())
                and bool(p.status.container_statuses)
                for p in pods
                if (p.metadata.annotations or {}).get("kubernetes.io/config.mirror")
            }
            if not static or not all(static.values()):
                last_break = time.monotonic()
            return {"static_pods_ready": static, "quiet_s": round(time.monotonic() - last_break)}

        try:
            wait_until(
                read,
                lambda seen: seen["quiet_s"] >= quiet_s,
                describe=f"the control plane to answer for {quiet_s:.0f} s without a break",
                timeout=timeout_s,
                interval=2.0,
            )
        except WaitTimeout as exc:
            raise ClusterError(f"the upgraded control plane did not settle: {exc}") from None

    def wait_node(self, node: str, timeout_s: float = 300) -> None:
        def read() -> dict[str, Any]:
            try:
                status = self.k8s.core.read_node(node).status
            except ApiException as exc:
                # Right after the control plane's upgrade the new API server answered 403 to
                # the cluster admin for a few seconds (its authorizer not synced yet).
                return {"kubelet": None, "ready": None, "error": f"{exc.status} {exc.reason}"}
            ready = next((c.status for c in status.conditions or () if c.type == "Ready"), None)
            return {"kubelet": status.node_info.kubelet_version, "ready": ready}

        try:
            wait_until(
                read,
                lambda s: s["kubelet"] == self.version and s["ready"] == "True",
                describe=f"node {node} Ready with kubelet {self.version}",
                timeout=timeout_s,
                interval=2.0,
            )
        except WaitTimeout as exc:
            raise ClusterError(f"node {node} did not come back upgraded: {exc}") from None
