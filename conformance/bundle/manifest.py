"""The bundle's manifest: what a bundle holds, each entry's cache key and its member's sha256,
and the checks a bundle must pass before anything of it is installed. Pure: no Docker, no
cache."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, BinaryIO

from conformance.errors import ConformanceError

SCHEMA = 1
MANIFEST_MEMBER = "manifest.json"
KINDS = ("image", "dir")
ROOTS = ("cache", "npm")  # the suite's cache root, or the Allure generator's npm prefix


class BundleError(ConformanceError):
    """A bundle that cannot be written, read or trusted; the message says what to do."""


@dataclass(frozen=True)
class Entry:
    """One thing a run looks up: a Docker image (`location` is its reference) or a directory
    (`location` relative to `root`)."""

    name: str
    kind: str
    key: str
    location: str
    root: str = "cache"

    @property
    def member(self) -> str:
        """The entry's member in the bundle's tar."""
        safe = self.name.replace("/", "_").replace(":", "_")
        return f"{'images' if self.kind == 'image' else 'dirs'}/{safe}.tar"


@dataclass(frozen=True)
class Member:
    sha256: str
    size: int


@dataclass(frozen=True)
class Manifest:
    suite_version: str
    suite_commit: str | None
    kubernetes: tuple[str, ...]
    go_version: str | None  # the Go components' keys include it
    entries: tuple[Entry, ...]
    members: Mapping[str, Member] = field(default_factory=dict)
    schema: int = SCHEMA

    def to_json(self) -> bytes:
        data = asdict(self)
        data["members"] = {name: asdict(m) for name, m in self.members.items()}
        return json.dumps(data, indent=2, sort_keys=True).encode()

    @classmethod
    def from_json(cls, text: bytes, source: str) -> Manifest:
        try:
            data = json.loads(text)
            if data.get("schema") != SCHEMA:
                raise ValueError(f"schema {data.get('schema')!r}, this suite reads {SCHEMA}")
            entries = tuple(_entry(e) for e in data["entries"])
            members = {
                n: Member(str(m["sha256"]), int(m["size"])) for n, m in data["members"].items()
            }
            return cls(
                suite_version=str(data["suite_version"]),
                suite_commit=data.get("suite_commit"),
                kubernetes=tuple(data["kubernetes"]),
                go_version=data.get("go_version"),
                entries=entries,
                members=members,
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BundleError(
                f"{source}: its manifest is not a dra-conformance bundle manifest ({exc})",
                "make the bundle again with `dra-conformance bundle save`",
            ) from None


def _entry(data: Any) -> Entry:
    entry = Entry(**{k: str(data[k]) for k in ("name", "kind", "key", "location", "root")})
    if entry.kind not in KINDS or entry.root not in ROOTS:
        raise ValueError(f"entry {entry.name!r}: kind {entry.kind!r}, root {entry.root!r}")
    outside = entry.location.startswith("/") or ".." in entry.location.split("/")
    if entry.kind == "dir" and outside:
        raise ValueError(f"entry {entry.name!r}: {entry.location!r} leaves its root")
    return entry


def problems(manifest: Manifest, found: Mapping[str, Member]) -> list[str]:
    """What differs between the members the manifest lists and those read (`found`): missing,
    unlisted, or not the listed size or sha256. Empty: the bundle is intact."""
    wanted = {e.member for e in manifest.entries}
    out = [f"{m}: not listed in the manifest's entries" for m in set(manifest.members) - wanted]
    for name in sorted(wanted):
        listed, read = manifest.members.get(name), found.get(name)
        if listed is None:
            out.append(f"{name}: no sha256 in the manifest")
        elif read is None:
            out.append(f"{name}: missing from the file")
        elif read != listed:
            out.append(
                f"{name}: sha256 {read.sha256[:12]}… ({read.size} bytes), the manifest says "
                f"{listed.sha256[:12]}… ({listed.size} bytes)"
            )
    out += [f"{name}: in the file but not in the manifest" for name in sorted(set(found) - wanted)]
    return sorted(out)


def key_changes(manifest: Manifest, wanted: Mapping[str, Entry]) -> list[str]:
    """Entries of the bundle this checkout would not find: same name, another key or place."""
    out = []
    for entry in manifest.entries:
        here = wanted.get(entry.name)
        if here is not None and (here.key, here.location) != (entry.key, entry.location):
            out.append(
                f"{entry.name}: the bundle has {entry.key}, this checkout looks up {here.key}"
            )
    return out


class HashingReader:
    """A file wrapper that hashes and counts what is read through it."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.sha = hashlib.sha256()
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.sha.update(data)
        self.size += len(data)
        return data

    def member(self) -> Member:
        return Member(self.sha.hexdigest(), self.size)
