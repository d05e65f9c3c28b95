"""The profile's `cdi` section: where a node's container runtime reads CDI spec files, and where
its kubelet keeps the DRA checkpoint that lists the CDI device ids of each prepared claim
(DRA-CORE-008 finds a claim's specs through those ids, as the runtime does).

The runtime's default spec directories (containerd's and CRI-O's `cdi_spec_dirs`) are always
searched; `specDirs` adds the ones a runtime is configured with besides them.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from conformance.model.schema import Problems, join

DEFAULT_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
DEFAULT_KUBELET_ROOT_DIR = "/var/lib/kubelet"
SECTION = "cdi"
_KEYS = ("specDirs", "kubeletRootDir")
_ABSOLUTE = re.compile(r"^/[^\0]*$")
_FORM = "an absolute directory path on the nodes (e.g. /opt/cdi)"


@dataclass(frozen=True)
class CdiPaths:
    extra_spec_dirs: tuple[str, ...] = ()
    kubelet_root_dir: str = DEFAULT_KUBELET_ROOT_DIR

    @property
    def spec_dirs(self) -> tuple[str, ...]:
        """Every directory the runtime reads specs from: the defaults, then the profile's."""
        return tuple(dict.fromkeys(DEFAULT_SPEC_DIRS + self.extra_spec_dirs))


def _directory(p: Problems, path: str, value: Any) -> str | None:
    text = p.string(path, value, _FORM, _ABSOLUTE)
    if text is None:
        return None
    normal = posixpath.normpath(text)
    if normal == "/":
        p.wrong(path, _FORM + ", not /", value)
        return None
    return normal


def parse_cdi_paths(p: Problems, value: Any) -> CdiPaths:
    if value is None:
        return CdiPaths()
    section = p.mapping(SECTION, value, _KEYS)
    if section is None:
        return CdiPaths()
    dirs: list[str] = []
    path = join(SECTION, "specDirs")
    for i, item in enumerate(p.list_of(path, section.get("specDirs", []), _FORM) or ()):
        directory = _directory(p, join(path, i), item)
        if directory:
            dirs.append(directory)
    root = DEFAULT_KUBELET_ROOT_DIR
    if "kubeletRootDir" in section:
        root = _directory(p, join(SECTION, "kubeletRootDir"), section["kubeletRootDir"]) or root
    return CdiPaths(tuple(dirs), root)
