"""`install.image.goModule`: build the driver from a public Go module at a pinned version
(conformance/images/gomodule.py builds it), so a public release is certified with no registry."""

from __future__ import annotations

import re

from pydantic import Field, model_validator

from conformance.model.profile import GoModuleSpec
from conformance.model.typed import Strict, fail, listed, text

# A module path: dot-separated host, then path elements (golang.org/x/mod/module's rules,
# loosely: the proxy refuses what is not a real module anyway).
MODULE_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*\.[a-z]{2,}(/[A-Za-z0-9._~+-]+)+$")
# A pinned version: semantic (v1.2.3, v1.2.3-rc.1, +incompatible) or a pseudo-version;
# `latest`, `main` or a query would change what is certified under the same profile.
VERSION_RE = re.compile(
    r"^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+incompatible)?$"
)
# A main package: module-relative (`./cmd/x`, `.`) or a full import path.
PACKAGE_RE = re.compile(r"^(\.|\./[A-Za-z0-9._~+/-]+|[a-z0-9][a-z0-9.-]*\.[a-z]{2,}(/\S+)*)$")
ABSOLUTE_DIR_RE = re.compile(r"^/([A-Za-z0-9._-]+/?)*$")

_MAJOR_SUFFIX = re.compile(r"^v[0-9]+$")


def import_path(module: str, package: str) -> str:
    """`./cmd/x` (relative to the module root) or a full import path, as a full import path."""
    if package in (".", "./"):
        return module
    if package.startswith("./"):
        return f"{module}/{package[2:].rstrip('/')}"
    return package.rstrip("/")


def binary_name(module: str, package: str) -> str:
    """The name `go build -o <dir>/` gives a main package's binary: its import path's last
    element, or the one before a `/vN` major-version suffix."""
    parts = import_path(module, package).split("/")
    return parts[-2] if len(parts) > 1 and _MAJOR_SUFFIX.match(parts[-1]) else parts[-1]


ModulePath = text("a Go module path such as 'sigs.k8s.io/dra-example-driver'", MODULE_RE)
ModuleVersion = text(
    "a pinned module version such as 'v0.4.0' (not a branch or 'latest')", VERSION_RE
)
Package = text("a main package: './cmd/<name>' or a full import path", PACKAGE_RE)
Packages = listed(Package, "main packages", nonempty=True)
BinaryDir = text("an absolute directory such as '/usr/bin'", ABSOLUTE_DIR_RE)


class GoModuleSection(Strict):
    """`{module, version, packages, binaryDir}`."""

    module: ModulePath = Field(description="the Go module path")
    version: ModuleVersion = Field(description="the pinned module version")
    packages: Packages = Field(description="main packages to build ('./cmd/<name>')")
    binary_dir: BinaryDir = Field("/usr/bin", description="where the binaries go in the image")

    @model_validator(mode="after")
    def _packages_in_module(self) -> GoModuleSection:
        names: dict[str, str] = {}
        for i, package in enumerate(self.packages):
            full = import_path(self.module, package)
            if not (full == self.module or full.startswith(self.module + "/")):
                fail(f"{package} is not a package of {self.module}", "packages", i)
            name = binary_name(self.module, package)
            if name in names:
                fail(f"{package} and {names[name]} both build a binary '{name}'", "packages", i)
            names[name] = package
        return self

    def domain(self) -> GoModuleSpec:
        return GoModuleSpec(self.module, self.version, self.packages, self.binary_dir)
