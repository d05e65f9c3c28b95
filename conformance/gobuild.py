"""Build Go binaries from the Go module proxy, cached by version: the node image's components
(conformance/images/components.py), the helm CLI, the selector helper (conformance/cel).

Each component is built in a small wrapper module (`go mod init` + `go get`), because the
upstream modules carry replace directives that `go install pkg@version` refuses. A build is a
fetch (that module set up, every module its packages import downloaded: network-bound) then a
compile (CPU-bound), so a build graph can run one component's fetch beside another's compile.
Outputs land in `<cache>/bin/<component>-<version>-<key>/`; a complete one is never rebuilt.
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
from typing import Protocol

from conformance.cache import build_lock, cache_root, digest
from conformance.errors import BuildError, HostError
from conformance.progress import Progress

LOCAL = "local"  # GOTOOLCHAIN value: build with the Go on PATH, never fetch another


class Substitute(Protocol):
    """A stand-in for a module the Go module proxy refuses (conformance/images/substitutes.py)."""

    @property
    def module(self) -> str: ...
    @property
    def source_module(self) -> str: ...
    @property
    def source_version(self) -> str: ...
    @property
    def why(self) -> str: ...
    @property
    def key(self) -> str: ...
    def write(self, work: Path, source_root: Path) -> Path: ...


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


def module_dir(module: str, version: str, toolchain: str = LOCAL) -> Path:
    """Where the Go module cache holds `module@version` (downloaded if needed)."""
    return Path(module_info(module, version, cache_root(), toolchain)["Dir"])


def module_info(module: str, version: str, workdir: Path, toolchain: str = LOCAL) -> dict:
    # An older Go refuses even to download a module whose go.mod needs a newer one.
    out = _run(
        [go_binary(), "mod", "download", "-json", f"{module}@{version}"],
        workdir,
        stage=f"download {module}@{version}",
        toolchain=toolchain,
    )
    return json.loads(out)


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


def work_dir(component: GoComponent) -> Path:
    """The wrapper module a component is fetched into and compiled in."""
    return cache_root() / "gobuild" / f"{component.name}-{component.version}"


# Written in the work directory once every module the build needs is downloaded: its content
# is the component's key, so a work directory set up for another build is never reused.
FETCHED = ".fetched"


def is_fetched(component: GoComponent) -> bool:
    marker = work_dir(component) / FETCHED
    return marker.is_file() and marker.read_text() == component.key


def _lock(component: GoComponent) -> tuple[str, str]:
    return f"go-{component.name}-{component.version}", f"{component.name} {component.version}"


def fetch(component: GoComponent, progress: Progress) -> None:
    """Set up the wrapper module and download every module the build needs (network-bound), so
    that `build` only compiles; nothing when the output is built or already fetched."""
    if is_built(component) or is_fetched(component):
        return
    lock, what = _lock(component)
    with build_lock(lock, f"{what} (Go module download)", progress.note):
        if not (is_built(component) or is_fetched(component)):
            _fetch_unlocked(component, progress)


def build(component: GoComponent, progress: Progress) -> Path:
    """Build one component unless its output directory is complete; return that directory.
    Fetches first unless `fetch` did."""
    out = output_dir(component)
    if is_built(component):
        return out
    # Two processes (a node-image build and a `cluster up`, pytest workers) must not share the
    # work directory: the second waits, then finds the output built.
    lock, what = _lock(component)
    with build_lock(lock, f"{what} (Go build)", progress.note):
        if is_built(component):
            return out
        if not is_fetched(component):
            _fetch_unlocked(component, progress)
        return _compile_unlocked(component, out, progress)


def _fetch_unlocked(component: GoComponent, progress: Progress) -> None:
    go = go_binary()
    work = work_dir(component)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log = work / "fetch.log"
    run = functools.partial(_run, toolchain=component.toolchain)
    with progress.stage(f"go get {component.name} {component.version} (module downloads)"):
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
        # Loading the packages downloads every module they import, which `go build` would
        # otherwise do between compiles.
        cmd = [go, "list", "-deps", *_tags(component), *component.packages]
        run(cmd, work, f"go list {component.name} (module downloads)", log)
        (work / FETCHED).write_text(component.key)


def _tags(component: GoComponent) -> list[str]:
    return ["-tags", ",".join(component.tags)] if component.tags else []


def _compile_unlocked(component: GoComponent, out: Path, progress: Progress) -> Path:
    go = go_binary()
    work = work_dir(component)
    log = work / "build.log"
    with progress.stage(f"go build {component.name} {component.version}"):
        tmp_out = out.with_name(out.name + ".tmp")
        shutil.rmtree(tmp_out, ignore_errors=True)
        tmp_out.mkdir(parents=True)
        cmd = [go, "build", "-trimpath", "-ldflags", component.ldflags, *_tags(component)]
        if len(component.packages) == 1:
            cmd += ["-o", str(tmp_out / component.binaries[0]), component.packages[0]]
        else:
            cmd += ["-o", str(tmp_out) + "/", *component.packages]
        _run(cmd, work, f"go build {component.name}", log, component.toolchain)
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
    info = module_info(substitute.source_module, substitute.source_version, work, toolchain)
    root = substitute.write(work, Path(info["Dir"]))
    replace = f"-replace={substitute.module}=./{root.relative_to(work)}"
    _run([go_binary(), "mod", "edit", replace], work, "go mod edit", toolchain=toolchain)
    progress.note(f"substituted {substitute.module}: {substitute.why}")


def _copy_godebug(component: GoComponent, work: Path) -> None:
    """k8s.io/kubernetes sets a `godebug default=...` line its binaries depend on."""
    info = module_info(component.module, component.version, work, component.toolchain)
    lines = [ln for ln in Path(info["GoMod"]).read_text().splitlines() if ln.startswith("godebug ")]
    if lines:
        with open(work / "go.mod", "a") as f:
            f.write("\n" + "\n".join(lines) + "\n")
