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

from pydantic import Field

from conformance.model.typed import Strict, checked, listed, wrong

DEFAULT_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
DEFAULT_KUBELET_ROOT_DIR = "/var/lib/kubelet"
SECTION = "cdi"
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


def _directory(value: Any) -> str:
    if not isinstance(value, str) or not _ABSOLUTE.match(value):
        wrong(_FORM, value)
    normal = posixpath.normpath(value)
    if normal == "/":
        wrong(_FORM + ", not /", value)
    return normal


Directory = checked(str, _directory, {"type": "string", "pattern": "^/"})
Directories = listed(Directory, _FORM)


class CdiSection(Strict):
    """`cdi`: the spec directories the runtime reads besides its defaults, the kubelet root."""

    spec_dirs: Directories = Field(
        (),
        description="absolute directories the runtime reads CDI specs from, besides "
        + " and ".join(DEFAULT_SPEC_DIRS),
    )
    kubelet_root_dir: Directory = Field(DEFAULT_KUBELET_ROOT_DIR, description=_FORM)

    def domain(self) -> CdiPaths:
        return CdiPaths(tuple(self.spec_dirs), self.kubelet_root_dir)
