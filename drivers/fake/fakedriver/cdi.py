"""CDI specs: one JSON file per prepared claim under the CDI directory.

The fake devices have no device nodes; a container proves what it received
through environment variables (names fixed in docs/CONTRACTS.md), e.g. for
device ``fa80-0``: ``DRA_ASSIGNED_FA80_0=<pool>/fa80-0`` and
``DRA_DEVICE_FA80_0_MODEL=fa-80``.
"""

from __future__ import annotations

import json
import os
import re
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

    def variables(self) -> list[str]:
        token = env_token(self.device)
        prefix = f"DRA_DEVICE_{token}_"
        env = [
            f"DRA_ASSIGNED_{token}={self.pool}/{self.device}",
            f"{prefix}MODEL={self.model}",
            f"{prefix}MEMORY={self.memory}",
            f"{prefix}POOL={self.pool}",
            f"{prefix}CLAIM_UID={self.claim_uid}",
            f"{prefix}CLAIM_NAME={self.claim_name}",
            f"{prefix}CLAIM_NAMESPACE={self.claim_namespace}",
            f"{prefix}REQUEST={','.join(self.requests)}",
            f"{prefix}ADMIN_ACCESS={'true' if self.admin_access else 'false'}",
        ]
        env += [f"{prefix}CONFIG_{env_token(k)}={v}" for k, v in sorted(self.config.items())]
        return env


def build_spec(
    claim_uid: str, devices: Sequence[tuple[str, DeviceEnv]], kind: str = CDI_KIND
) -> dict[str, Any]:
    """``devices``: (allocated device name, what its env should say).

    One CDI device per allocated device: a device allocated twice to the same
    claim (shared with distinct shareIDs) keeps its first entry, because CDI
    device names must be unique within a spec.
    """
    entries: dict[str, dict[str, Any]] = {}
    for allocated, env in devices:
        name = cdi_device_name(claim_uid, allocated)
        entries.setdefault(name, {"name": name, "containerEdits": {"env": env.variables()}})
    return {"cdiVersion": CDI_VERSION, "kind": kind, "devices": list(entries.values())}


class CdiSpecStore:
    """Writes and removes the per-claim spec files, atomically."""

    def __init__(self, cdi_dir: str | Path, driver: str = DRIVER_NAME) -> None:
        self.dir = Path(cdi_dir)
        self._driver = driver

    def path_for(self, claim_uid: str) -> Path:
        return self.dir / f"{self._driver}-{claim_uid}.json"

    def write(self, claim_uid: str, spec: Mapping[str, Any]) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.path_for(claim_uid)
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

    def remove(self, claim_uid: str) -> None:
        self.path_for(claim_uid).unlink(missing_ok=True)

    def claim_uids(self) -> list[str]:
        prefix = f"{self._driver}-"
        return sorted(p.name[len(prefix) : -len(".json")] for p in self.dir.glob(f"{prefix}*.json"))
