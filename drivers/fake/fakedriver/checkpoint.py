"""The node-local checkpoint of prepared claims.

It makes prepare idempotent across driver restarts: a claim prepared before
the restart is answered from the checkpoint (and is not prepared twice), and
unprepare after the restart still finds the claim's CDI spec; it keeps each
spec's contents too, so a restart writes again the specs a reboot removed. Written
atomically (temp file, fsync, rename, fsync of the directory) with a checksum,
so a torn or edited file is detected instead of trusted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CHECKPOINT_VERSION = 1


@dataclass(frozen=True)
class PreparedDevice:
    request_names: tuple[str, ...]
    pool_name: str
    device_name: str
    cdi_device_ids: tuple[str, ...]
    share_id: str | None = None
    admin_access: bool = False


@dataclass(frozen=True)
class PreparedClaim:
    uid: str
    namespace: str
    name: str
    devices: tuple[PreparedDevice, ...]
    cdi_spec: str
    prepared_at: float = field(default_factory=time.time)
    # The spec written at prepare: a restart that finds the file gone (a reboot emptied /run)
    # writes it again, since a restarted container of a running pod gets no new prepare.
    cdi_document: dict[str, Any] | None = None
    # The device metadata CDI specs written at prepare, by path (written again like the above).
    metadata_specs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PreparedClaim:
        devices = tuple(
            PreparedDevice(
                request_names=tuple(d["request_names"]),
                pool_name=d["pool_name"],
                device_name=d["device_name"],
                cdi_device_ids=tuple(d["cdi_device_ids"]),
                share_id=d.get("share_id"),
                admin_access=bool(d.get("admin_access", False)),
            )
            for d in raw["devices"]
        )
        return cls(
            uid=raw["uid"],
            namespace=raw["namespace"],
            name=raw["name"],
            devices=devices,
            cdi_spec=raw["cdi_spec"],
            prepared_at=float(raw.get("prepared_at", 0.0)),
            cdi_document=raw.get("cdi_document"),
            metadata_specs=dict(raw.get("metadata_specs") or {}),
        )


def _checksum(claims: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).hexdigest()


class Checkpoint:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self) -> dict[str, PreparedClaim]:
        """Prepared claims by UID; a corrupt file is moved aside, not trusted."""
        if not self.path.exists():
            return {}
        try:
            raw = json.loads(self.path.read_text())
            claims = raw["claims"]
            if raw.get("version") != CHECKPOINT_VERSION or raw.get("checksum") != _checksum(claims):
                raise ValueError("version or checksum mismatch")
            return {uid: PreparedClaim.from_dict(c) for uid, c in claims.items()}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            log.error("checkpoint %s is unusable (%s); moved to %s", self.path, exc, aside)
            self.path.replace(aside)
            return {}

    def save(self, claims: dict[str, PreparedClaim]) -> None:
        payload = {uid: c.to_dict() for uid, c in sorted(claims.items())}
        document = {
            "version": CHECKPOINT_VERSION,
            "checksum": _checksum(payload),
            "claims": payload,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        with open(tmp, "w") as fh:
            json.dump(document, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)
