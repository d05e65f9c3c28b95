"""CDI specs: one JSON file per prepared claim under the CDI directory.

By default a spec file and its CDI device names carry the claim's UID
(``<driver>-<claimUID>.json``, devices ``<claimUID>-<device>``). With
``by_device`` (a legal behaviour of fakedriver.misbehave.cdi) they are named by
device and a random token instead (``<driver>-dev-<device>-<token>.json``,
devices ``<device>-<token>``) and the env omits the claim's UID: nothing in the
file names the claim, as with drivers that key their specs by device; only the
CDI device ids the kubelet got from prepare lead to it.

The fake devices have no device nodes; a container proves what it received
through environment variables (names fixed in docs/CONTRACTS.md), e.g. for
device ``fa80-0``: ``DRA_ASSIGNED_FA80_0=<pool>/fa80-0`` and
``DRA_DEVICE_FA80_0_MODEL=fa-80``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakedriver import CDI_KIND, DRIVER_NAME

CDI_VERSION = "0.6.0"


def env_token(text: str) -> str:
    """Upper-case, every non-alphanumeric character replaced by ``_``."""
    return re.sub(r"[^A-Z0-9]", "_", text.upper())


def cdi_device_name(claim_uid: str, device: str) -> str:
    return f"{claim_uid}-{device}"


def cdi_device_id(claim_uid: str, device: str, kind: str = CDI_KIND) -> str:
    return f"{kind}={cdi_device_name(claim_uid, device)}"


@dataclass(frozen=True)
class SpecNaming:
    """How one claim's spec file and CDI devices are named (see the module docstring)."""

    claim_uid: str
    token: str | None = None  # set: named by device and this token

    @classmethod
    def by_device(cls, claim_uid: str) -> SpecNaming:
        return cls(claim_uid, secrets.token_hex(4))

    def device_name(self, device: str) -> str:
        if self.token is None:
            return cdi_device_name(self.claim_uid, device)
        return f"{device}-{self.token}"

    def device_id(self, device: str, kind: str = CDI_KIND) -> str:
        return f"{kind}={self.device_name(device)}"


@dataclass(frozen=True)
class DeviceEnv:
    """What a container should learn about one allocated device."""

    device: str  # the name used for the variables (normally the allocated device)
    pool: str
    model: str
    memory: str
    claim_uid: str
    claim_name: str
    claim_namespace: str
    requests: Sequence[str]
    admin_access: bool
    config: Mapping[str, str]
    show_claim_uid: bool = True
    # set: the claim the device is still being released from (a misbehaving release); the
    # device is not set up, so the entry says only that (CDI needs at least one edit)
    releasing_from: str = ""

    def variables(self) -> list[str]:
        token = env_token(self.device)
        prefix = f"DRA_DEVICE_{token}_"
        if self.releasing_from:
            return [f"{prefix}RELEASING_FROM={self.releasing_from}"]
        env = [
            f"DRA_ASSIGNED_{token}={self.pool}/{self.device}",
            f"{prefix}MODEL={self.model}",
            f"{prefix}MEMORY={self.memory}",
            f"{prefix}POOL={self.pool}",
            *([f"{prefix}CLAIM_UID={self.claim_uid}"] if self.show_claim_uid else []),
            f"{prefix}CLAIM_NAME={self.claim_name}",
            f"{prefix}CLAIM_NAMESPACE={self.claim_namespace}",
            f"{prefix}REQUEST={','.join(self.requests)}",
            f"{prefix}ADMIN_ACCESS={'true' if self.admin_access else 'false'}",
        ]
        env += [f"{prefix}CONFIG_{env_token(k)}={v}" for k, v in sorted(self.config.items())]
        return env


def build_spec(
    claim_uid: str | SpecNaming, devices: Sequence[tuple[str, DeviceEnv]], kind: str = CDI_KIND
) -> dict[str, Any]:
    """``devices``: (allocated device name, what its env should say).

    One CDI device per allocated device: a device allocated twice to the same
    claim (shared with distinct shareIDs) keeps its first entry, because CDI
    device names must be unique within a spec.
    """
    naming = claim_uid if isinstance(claim_uid, SpecNaming) else SpecNaming(claim_uid)
    entries: dict[str, dict[str, Any]] = {}
    for allocated, env in devices:
        name = naming.device_name(allocated)
        entries.setdefault(name, {"name": name, "containerEdits": {"env": env.variables()}})
    return {"cdiVersion": CDI_VERSION, "kind": kind, "devices": list(entries.values())}


class CdiSpecStore:
    """Writes and removes the per-claim spec files, atomically."""

    def __init__(self, cdi_dir: str | Path, driver: str = DRIVER_NAME) -> None:
        self.dir = Path(cdi_dir)
        self._driver = driver

    def path_for(self, claim_uid: str | SpecNaming, first_device: str = "") -> Path:
        naming = claim_uid if isinstance(claim_uid, SpecNaming) else SpecNaming(claim_uid)
        if naming.token is None:
            return self.dir / f"{self._driver}-{naming.claim_uid}.json"
        return self.dir / f"{self._driver}-dev-{first_device}-{naming.token}.json"

    def write(
        self, claim_uid: str | SpecNaming, spec: Mapping[str, Any], first_device: str = ""
    ) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.path_for(claim_uid, first_device)
        return self.write_to(path, spec)

    def write_to(self, path: Path, spec: Mapping[str, Any]) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        # The runtime watches this directory: write a dot-file (CDI ignores
        # names without .json/.yaml) and rename, so it never reads half a spec.
        tmp = self.dir / f".{path.name}.tmp"
        with open(tmp, "w") as fh:
            json.dump(spec, fh, indent=2, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
        return path

    def read(self, claim_uid: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.path_for(claim_uid).read_text())
        except (OSError, ValueError):
            return None

    def remove(self, claim_uid: str, path: str | Path | None = None) -> None:
        """Remove the claim's spec: the file named by its UID, and `path` (where it was
        written, when known: a spec named by device)."""
        self.path_for(claim_uid).unlink(missing_ok=True)
        if path:
            Path(path).unlink(missing_ok=True)

    def claim_uids(self) -> list[str]:
        """The claims of the spec files named by claim UID."""
        prefix = f"{self._driver}-"
        return sorted(
            p.name[len(prefix) : -len(".json")]
            for p in self.dir.glob(f"{prefix}*.json")
            if p not in self.device_named()
        )

    def device_named(self) -> list[Path]:
        """The spec files named by device."""
        return sorted(self.dir.glob(f"{self._driver}-dev-*.json"))
