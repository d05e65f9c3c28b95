"""Build the Go binaries of the node image from the Go module proxy, cached by version.

Each component is built in a small wrapper module (`go mod init` + `go get`), because the
upstream modules carry replace directives that `go install pkg@version` refuses. Outputs land in
`<cache>/bin/<component>-<version>-<key>/`; a complete output directory is never rebuilt.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from conformance.cluster import releases
from conformance.cluster.buildlock import build_lock
from conformance.cluster.substitutes import SUBSTITUTES, Substitute
from conformance.cluster.versions import HELM_VERSION, NodeVersions, cache_root, digest
from conformance.errors import BuildError, HostError
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
LOCAL = "local"  # GOTOOLCHAIN value: build with the Go on PATH, never fetch another


@dataclass(frozen=True)
class GoComponent:
    name: str
    version: str
    module: str
    packages: tuple[str, ...]
    ldflags: str = "-s -w"
    tags: tuple[str, ...] = ()
    replaces: tuple[tuple[str, str], ...] = ()
    binaries: tuple[str, ...] = field(default=())
    toolchain: str = LOCAL  # GOTOOLCHAIN for this build: the host's Go, or e.g. go1.27.3
    substitutes: tuple[Substitute, ...] = ()  # refused modules built from a stand-in
    # A main package of our own (one Go file) built against `module@version`; packages=(".",).
    main_source: Path | None = None

    @property
    def key(self) -> str:
        return digest(
            "go",
            self.name,
            self.version,
            self.module,
            self.packages,
            self.ldflags,
            self.tags,
            self.replaces,
            go_version() if self.toolchain == LOCAL else self.toolchain,
            *(s.key for s in self.substitutes),
            *(self._main_source_digest(),) if self.main_source else (),
        )

    def _main_source_digest(self) -> str:
        assert self.main_source is not None
        return hashlib.sha256(self.main_source.read_bytes()).hexdigest()


_GO_VERSION: str | None = None


def go_binary() -> str:
    go = shutil.which("go")
    if go is None:
        raise HostError(
            "the Go toolchain (`go`) is not on PATH; it builds the node image",
            "install Go >= 1.26 (for example from the Go distribution) and retry",
        )
    return go


def go_version() -> str:
    global _GO_VERSION
    if _GO_VERSION is None:
        _GO_VERSION = subprocess.run(
            [go_binary(), "env", "GOVERSION"], capture_output=True, text=True, check=True
        ).stdout.strip()
    return _GO_VERSION


def go_env(toolchain: str = LOCAL) -> dict[str, str]:
    cache = cache_root()
    return {
        **os.environ,
        "GOCACHE": str(cache / "gocache"),
        "GOFLAGS": "-mod=mod",
        "CGO_ENABLED": "0",
        "GOTOOLCHAIN": toolchain,
    }


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


def module_dir(module: str, version: str, toolchain: str = LOCAL) -> Path:
    """Where the Go module cache holds `module@version` (downloaded if needed)."""
    return Path(_module_info(module, version, cache_root(), toolchain)["Dir"])


def _module_info(module: str, version: str, workdir: Path, toolchain: str = LOCAL) -> dict:
    # An older Go refuses even to download a module whose go.mod needs a newer one.
    out = _run(
        [go_binary(), "mod", "download", "-json", f"{module}@{version}"],
        workdir,
        stage=f"download {module}@{version}",
        toolchain=toolchain,
    )
    return json.loads(out)


def _staging_replaces(v: NodeVersions, workdir: Path) -> tuple[tuple[str, str], ...]:
    """Every `=> ./staging/...` replace of k8s.io/kubernetes, pointed at the tagged module."""
    info = _module_info("k8s.io/kubernetes", v.kubernetes, workdir, toolchain_for(v.kubernetes))
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
    if not releases.go_too_old(release, go_version()):
        return LOCAL
    toolchain = f"go{release.go_upstream}"
    result = subprocess.run(
        [go_binary(), "env", "GOVERSION"],
        cwd=cache_root(),
        env=go_env(toolchain),
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or result.stdout.strip() != toolchain:
        reason = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise HostError(
            f"Kubernetes {kubernetes} needs Go >= {release.go_directive} (its go.mod); this "
            f"host has {go_version()} and fetching {toolchain} from the Go module proxy "
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
            replaces=_staging_replaces(v, workdir),
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


def _run(
    cmd: list[str], cwd: Path, stage: str, log: Path | None = None, toolchain: str = LOCAL
) -> str:
    result = subprocess.run(cmd, cwd=cwd, env=go_env(toolchain), capture_output=True, text=True)
    if log is not None:
        log.write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        refused = refused_module(result.stderr + result.stdout)
        if refused:
            raise BuildError(
                f"stage '{stage}': the Go module proxy refuses {refused} (403), a dependency of "
                "this build, so it cannot be built from the module proxy here",
                f"point GOPROXY at a proxy that serves {refused}; full log: {log}",
            )
        excerpt = "\n".join((result.stderr or result.stdout).strip().splitlines()[-25:])
        raise BuildError(
            f"stage '{stage}' failed ({' '.join(cmd[:3])} ...):\n{excerpt}",
            f"full log: {log}" if log else "",
        )
    return result.stdout


_REFUSED = re.compile(r"(\S+@v\S+): reading https?://\S+: 403 Forbidden")


def refused_module(output: str) -> str | None:
    """`module@version` the proxy refused to serve (a 403), from the go command's output."""
    match = _REFUSED.search(output)
    return match.group(1) if match else None


def output_dir(component: GoComponent) -> Path:
    return cache_root() / "bin" / f"{component.name}-{component.version}-{component.key}"


def is_built(component: GoComponent) -> bool:
    out = output_dir(component)
    return all((out / b).is_file() for b in component.binaries)


def build(component: GoComponent, progress: Progress) -> Path:
    """Build one component unless its output directory is complete; return that directory."""
    out = output_dir(component)
    if is_built(component):
        return out
    # Two processes (a node-image build and a `cluster up`, pytest workers) must not share the
    # work directory: the second waits, then finds the output built.
    with build_lock(f"go-{component.name}-{component.version}"):
        if is_built(component):
            return out
        return _build_unlocked(component, out, progress)


def _build_unlocked(component: GoComponent, out: Path, progress: Progress) -> Path:
    go = go_binary()
    work = cache_root() / "gobuild" / f"{component.name}-{component.version}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log = work / "build.log"
    run = functools.partial(_run, toolchain=component.toolchain)
    with progress.stage(f"go build {component.name} {component.version}"):
        run([go, "mod", "init", f"local/build-{component.name}"], work, "go mod init")
        for old, new in component.replaces:
            run([go, "mod", "edit", f"-replace={old}={new}"], work, "go mod edit")
        for substitute in component.substitutes:
            _write_substitute(substitute, work, component.toolchain, progress)
        run(
            [go, "get", f"{component.module}@{component.version}"],
            work,
            f"go get {component.module}@{component.version}",
            log,
        )
        if component.name == "kubernetes":
            _copy_godebug(component, work)
        if component.main_source is not None:
            shutil.copyfile(component.main_source, work / "main.go")
        tmp_out = out.with_name(out.name + ".tmp")
        shutil.rmtree(tmp_out, ignore_errors=True)
        tmp_out.mkdir(parents=True)
        cmd = [go, "build", "-trimpath", "-ldflags", component.ldflags]
        if component.tags:
            cmd += ["-tags", ",".join(component.tags)]
        if len(component.packages) == 1:
            cmd += ["-o", str(tmp_out / component.binaries[0]), component.packages[0]]
        else:
            cmd += ["-o", str(tmp_out) + "/", *component.packages]
        run(cmd, work, f"go build {component.name}", log)
        if component.substitutes:
            (tmp_out / "SUBSTITUTES").write_text(
                "".join(f"{s.why}\n" for s in component.substitutes)
            )
        shutil.rmtree(out, ignore_errors=True)
        tmp_out.rename(out)
    return out


def _write_substitute(
    substitute: Substitute, work: Path, toolchain: str, progress: Progress
) -> None:
    """Put the stand-in for a refused module into the build and point the module at it."""
    info = _module_info(substitute.source_module, substitute.source_version, work, toolchain)
    root = substitute.write(work, Path(info["Dir"]))
    replace = f"-replace={substitute.module}=./{root.relative_to(work)}"
    _run([go_binary(), "mod", "edit", replace], work, "go mod edit", toolchain=toolchain)
    progress.note(f"substituted {substitute.module}: {substitute.why}")


def _copy_godebug(component: GoComponent, work: Path) -> None:
    """k8s.io/kubernetes sets a `godebug default=...` line its binaries depend on."""
    info = _module_info(component.module, component.version, work, component.toolchain)
    lines = [ln for ln in Path(info["GoMod"]).read_text().splitlines() if ln.startswith("godebug ")]
    if lines:
        with open(work / "go.mod", "a") as f:
            f.write("\n" + "\n".join(lines) + "\n")


def build_all(v: NodeVersions, progress: Progress) -> dict[str, Path]:
    work = cache_root() / "gobuild"
    return {c.name: build(c, progress) for c in components(v, work)}


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
    return build(helm_component(version), progress) / "helm"
