"""Writing and reading the bundle file: one uncompressed tar, one member per entry (a Docker
image as `docker save` writes it, a cache directory as a tar of its own), the manifest last,
once every member's sha256 is known."""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import BinaryIO

from conformance import docker_client
from conformance.bundle.entries import install_root
from conformance.bundle.manifest import (
    MANIFEST_MEMBER,
    BundleError,
    Entry,
    HashingReader,
    Manifest,
    Member,
)
from conformance.progress import Progress

CHUNK = 4 << 20
REPORT_EVERY_S = 10.0


class CountingWriter:
    """The bundle file, printing the bytes written so far every REPORT_EVERY_S seconds."""

    def __init__(self, raw: BinaryIO, progress: Progress, verb: str = "written") -> None:
        self.raw = raw
        self.progress = progress
        self.verb = verb
        self.count = 0
        self._last = time.monotonic()

    def write(self, data: bytes) -> int:
        self.raw.write(data)
        self.tick(len(data))
        return len(data)

    def tick(self, n: int) -> None:
        self.count += n
        if time.monotonic() - self._last >= REPORT_EVERY_S:
            self._last = time.monotonic()
            self.progress.note(f"  {self.count / 1e6:,.0f} MB {self.verb}")


class CountingReader(CountingWriter):
    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.tick(len(data))
        return data


def _stage_image(ref: str, dest: BinaryIO, progress: Progress) -> None:
    out = CountingWriter(dest, progress, "read from Docker")
    for chunk in docker_client.client().api.get_image(ref, chunk_size=CHUNK):
        out.write(chunk)


def _stage_dir(root: Path, dest: BinaryIO) -> None:
    with tarfile.open(fileobj=dest, mode="w|") as tar:
        for path in sorted(root.rglob("*")):
            tar.add(path, arcname=path.relative_to(root).as_posix(), recursive=False)


def _add_member(tar: tarfile.TarFile, name: str, staged: BinaryIO) -> Member:
    info = tarfile.TarInfo(name)
    info.size = staged.seek(0, io.SEEK_END)
    info.mtime = int(time.time())
    staged.seek(0)
    reader = HashingReader(staged)
    tar.addfile(info, reader)
    return reader.member()


def write(
    path: Path,
    entries: Iterable[Entry],
    manifest_for: Callable[[Mapping[str, Member]], Manifest],
    progress: Progress,
) -> int:
    """Write the bundle to `path` (through `path`.partial, renamed when complete); the manifest
    is `manifest_for(members)`. Returns the file's size."""
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "wb") as raw:
            out = CountingWriter(raw, progress)
            with tarfile.open(fileobj=out, mode="w|") as tar:
                members: dict[str, Member] = {}
                for entry in entries:
                    with (
                        progress.stage(f"bundle {entry.name} ({entry.location})"),
                        tempfile.TemporaryFile(dir=path.parent) as staged,
                    ):
                        if entry.kind == "image":
                            _stage_image(entry.location, staged, progress)
                        else:
                            _stage_dir(install_root(entry), staged)
                        members[entry.member] = _add_member(tar, entry.member, staged)
                data = manifest_for(members).to_json()
                info = tarfile.TarInfo(MANIFEST_MEMBER)
                info.size, info.mtime = len(data), int(time.time())
                tar.addfile(info, io.BytesIO(data))
        partial.rename(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path.stat().st_size


def read(path: Path, staging: Path, progress: Progress) -> tuple[bytes, dict[str, Member]]:
    """Every member of the bundle into `staging` (hashed on the way), and the manifest's text.
    A file that is no complete tar is a BundleError."""
    found: dict[str, Member] = {}
    manifest: bytes | None = None
    try:
        with (
            open(path, "rb") as raw,
            tarfile.open(fileobj=CountingReader(raw, progress, "read"), mode="r|") as tar,
        ):
            for info in tar:
                handle = tar.extractfile(info) if info.isfile() else None
                if handle is None:
                    continue
                if info.name == MANIFEST_MEMBER:
                    manifest = handle.read()
                    continue
                reader = HashingReader(handle)
                with open(staging / _staged_name(info.name), "wb") as dest:
                    shutil.copyfileobj(reader, dest, CHUNK)
                found[info.name] = reader.member()
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise BundleError(
            f"{path} is not a complete bundle ({exc})",
            "copy the file again, or make it again with `dra-conformance bundle save`",
        ) from None
    if manifest is None:
        raise BundleError(
            f"{path} has no {MANIFEST_MEMBER}: it is cut short or not a bundle",
            "copy the file again, or make it again with `dra-conformance bundle save`",
        )
    return manifest, found


def _staged_name(member: str) -> str:
    return member.replace("/", "__")


def staged_file(staging: Path, entry: Entry) -> Path:
    return staging / _staged_name(entry.member)


def load_image(staged: Path) -> None:
    with open(staged, "rb") as data:
        docker_client.client().images.load(data)


def install_dir(staged: Path, target: Path) -> None:
    """Extract into a temporary sibling of `target`, then rename it into place: a run never
    sees half an entry."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.bundle-", dir=target.parent))
    try:
        with tarfile.open(staged, mode="r:") as tar:
            tar.extractall(tmp, filter="data")
        if target.exists():  # present but incomplete: the builder would replace it too
            shutil.rmtree(target)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
