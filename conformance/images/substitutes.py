"""Go modules the proxy reachable here refuses, and what the build puts in their place.

A release that needs one names it in `releases.Release.substitutes`; the Kubernetes build then
writes the stand-in module into its work directory and replaces the refused module with it.
Each stand-in is built from an earlier Kubernetes release's own code (taken from the Go module
cache, never committed) plus an adapter of ours, and says so in the build's record.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from conformance.cache import digest
from conformance.images.releases import release_for


@dataclass(frozen=True)
class Substitute:
    module: str  # the refused module, e.g. sigs.k8s.io/iptables-wrappers
    refused_version: str  # the version the release requires
    package_dir: str  # its package the release imports, relative to the module root
    source_module: str  # the module whose code the stand-in adapts
    source_version: str
    source_dir: str  # the package in source_module that was moved out
    adapter_asset: str  # our adapter, in conformance.images.assets
    requires: tuple[tuple[str, str], ...]  # the refused module's own go.mod requirements
    why: str  # one line for the build record and the docs

    def adapter(self) -> bytes:
        return (
            resources.files("conformance.images.assets").joinpath(self.adapter_asset).read_bytes()
        )

    @property
    def key(self) -> str:
        """Changes when the stand-in would come out differently."""
        return digest(
            "substitute",
            self.module,
            self.source_module,
            self.source_version,
            self.source_dir,
            self.adapter().decode(),
        )

    def write(self, work: Path, source_root: Path) -> Path:
        """Write the stand-in module under `work`; `source_root` is source_module's directory
        in the Go module cache. Returns the module's directory."""
        root = work / "substitutes" / self.module.replace("/", "_")
        shutil.rmtree(root, ignore_errors=True)
        package = root / self.package_dir
        (package / "legacy").mkdir(parents=True)
        requires = "\n".join(f"\t{m} {v}" for m, v in self.requires)
        (root / "go.mod").write_text(
            f"module {self.module}\n\ngo 1.25\n\nrequire (\n{requires}\n)\n"
        )
        source = source_root / self.source_dir
        copied = [f for f in sorted(source.glob("*.go")) if not f.name.endswith("_test.go")]
        if not copied:
            raise FileNotFoundError(f"no Go sources in {source}")
        for f in copied:
            (package / "legacy" / f.name).write_bytes(f.read_bytes())
        (package / "adapter.go").write_bytes(self.adapter())
        return root


IPTABLES_WRAPPERS = Substitute(
    module="sigs.k8s.io/iptables-wrappers",
    refused_version="v1.0.0",
    package_dir="pkg/iptables",
    source_module="k8s.io/kubernetes",
    source_version="v1.37.2",
    source_dir="pkg/util/iptables",
    adapter_asset="iptables_wrappers.go.txt",
    requires=(
        ("k8s.io/klog/v2", "v2.80.1"),
        ("k8s.io/utils", "v0.0.0-20260626114624-be93311217bd"),
    ),
    why=(
        "sigs.k8s.io/iptables-wrappers v1.0.0 (the iptables helper v1.38 moved out of the "
        "tree) is refused by the Go module proxy here; built from v1.37.2's "
        "pkg/util/iptables behind an adapter to the v1.38 API"
    ),
)

SUBSTITUTES = {s.module: s for s in (IPTABLES_WRAPPERS,)}


def build_notes(kubernetes_version: str) -> tuple[str, ...]:
    """What the node image of `kubernetes_version` was built with in place of refused modules,
    one line each, for a run's report; () for a release without stand-ins or an unknown one."""
    try:
        release = release_for(kubernetes_version)
    except ValueError:
        return ()
    return tuple(SUBSTITUTES[m].why for m in release.substitutes)
