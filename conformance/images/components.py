"""The Go components the suite builds with conformance/gobuild.py: Kubernetes, containerd, etcd
and kind for the node image (with the Go toolchain each Kubernetes release needs), and the helm
CLI for `install.method: helm`."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from conformance import gobuild
from conformance.cache import cache_root
from conformance.errors import BuildError, HostError
from conformance.gobuild import GoComponent
from conformance.images import releases
from conformance.images.substitutes import SUBSTITUTES
from conformance.images.versions import HELM_VERSION, NodeVersions
from conformance.progress import Progress

KUBERNETES_COMMANDS = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-proxy",
    "kubelet",
    "kubeadm",
    "kubectl",
)
CONTAINERD_COMMANDS = ("containerd", "ctr", "containerd-shim-runc-v2")
BUILD_DATE = "2026-01-01T00:00:00Z"  # fixed so rebuilds are reproducible


def _version_ldflags(version: str) -> str:
    major, minor = version.removeprefix("v").split(".")[:2]
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitCommit=0000000000000000000000000000000000000000",
            f"-X {pkg}.gitTreeState=clean",
            f"-X {pkg}.buildDate={BUILD_DATE}",
        ]
    return " ".join(flags)


def staging_replaces(v: NodeVersions, workdir: Path) -> tuple[tuple[str, str], ...]:
    """Every `=> ./staging/...` replace of k8s.io/kubernetes, pointed at the tagged module."""
    info = gobuild.module_info(
        "k8s.io/kubernetes", v.kubernetes, workdir, toolchain_for(v.kubernetes)
    )
    replaces = []
    for line in Path(info["GoMod"]).read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("./staging/"):
            replaces.append((parts[0], f"{parts[0]}@{v.staging}"))
    if not replaces:
        raise BuildError(f"no staging replaces found in k8s.io/kubernetes@{v.kubernetes} go.mod")
    return tuple(replaces)


@functools.cache
def toolchain_for(kubernetes: str) -> str:
    """The GOTOOLCHAIN that builds `kubernetes`: the host's Go when it is new enough, else the
    Go upstream releases it with, which the go command fetches from the Go module proxy (the
    one source of a newer Go here). Checked before any build: a Go that cannot be had fails in
    seconds with what to do, not after minutes of module downloads."""
    release = releases.release_for(kubernetes)
    if not releases.go_too_old(release, gobuild.go_version()):
        return gobuild.LOCAL
    toolchain = f"go{release.go_upstream}"
    result = subprocess.run(
        [gobuild.go_binary(), "env", "GOVERSION"],
        cwd=cache_root(),
        env=gobuild.go_env(toolchain),
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or result.stdout.strip() != toolchain:
        reason = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise HostError(
            f"Kubernetes {kubernetes} needs Go >= {release.go_directive} (its go.mod); this "
            f"host has {gobuild.go_version()} and fetching {toolchain} from the Go module proxy "
            f"failed: {reason[0]}",
            f"make the Go module proxy reachable (GOPROXY) or install Go {release.go_upstream}",
        )
    return toolchain


def components(v: NodeVersions, workdir: Path) -> list[GoComponent]:
    workdir.mkdir(parents=True, exist_ok=True)
    toolchain = toolchain_for(v.kubernetes)
    return [
        GoComponent(
            name="kubernetes",
            version=v.kubernetes,
            module="k8s.io/kubernetes",
            packages=tuple(f"k8s.io/kubernetes/cmd/{c}" for c in KUBERNETES_COMMANDS),
            ldflags=_version_ldflags(v.kubernetes),
            replaces=staging_replaces(v, workdir),
            binaries=KUBERNETES_COMMANDS,
            toolchain=toolchain,
            substitutes=tuple(
                SUBSTITUTES[m] for m in releases.release_for(v.kubernetes).substitutes
            ),
        ),
        GoComponent(
            name="containerd",
            version=v.containerd,
            module="github.com/containerd/containerd/v2",
            packages=tuple(
                f"github.com/containerd/containerd/v2/cmd/{c}" for c in CONTAINERD_COMMANDS
            ),
            ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version="
            f"{v.containerd} -X github.com/containerd/containerd/v2/version.Package="
            "github.com/containerd/containerd/v2",
            tags=("no_aufs", "no_zfs", "no_btrfs", "no_devmapper"),
            binaries=CONTAINERD_COMMANDS,
        ),
        GoComponent(
            name="etcd",
            version=v.etcd,
            module="go.etcd.io/etcd/server/v3",
            packages=("go.etcd.io/etcd/server/v3",),
            binaries=("etcd",),
        ),
        GoComponent(
            name="kind",
            version=v.kind,
            module="sigs.k8s.io/kind",
            packages=("sigs.k8s.io/kind",),
            binaries=("kind",),
        ),
    ]


def build_all(v: NodeVersions, progress: Progress) -> dict[str, Path]:
    work = cache_root() / "gobuild"
    return {c.name: gobuild.build(c, progress) for c in components(v, work)}


def helm_component(version: str = HELM_VERSION) -> GoComponent:
    """The helm CLI; its module path carries the major version (helm.sh/helm/v4)."""
    module = f"helm.sh/helm/{version.split('.')[0]}"
    ldflags = (
        f"-s -w -X {module}/internal/version.version={version}"
        f" -X {module}/internal/version.gitTreeState=clean"
    )
    return GoComponent(
        name="helm",
        version=version,
        module=module,
        packages=(f"{module}/cmd/helm",),
        ldflags=ldflags,
        binaries=("helm",),
    )


def helm_binary(progress: Progress, version: str = HELM_VERSION) -> Path:
    """The built helm, building it on first use (cold: 2-5 minutes on 2 cores)."""
    return gobuild.build(helm_component(version), progress) / "helm"
