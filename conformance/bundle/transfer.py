"""`bundle save` and `bundle load`: everything a run builds, moved to another machine in one
file. Save refuses to write a bundle with an entry missing; load verifies every member before
it installs anything, and installs each entry by rename, so a bad file leaves nothing behind."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from docker.errors import DockerException

from conformance import docker_client, gobuild
from conformance.bundle import archive, entries
from conformance.bundle.manifest import BundleError, Entry, Manifest, Member, key_changes, problems
from conformance.cache import cache_root
from conformance.errors import ConformanceError
from conformance.images.suite_image import suite_version
from conformance.progress import Progress
from conformance.suite_root import SUITE_ROOT


@dataclass
class LoadResult:
    installed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # present already
    not_found: list[str] = field(default_factory=list)  # keys this checkout would not look up


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(SUITE_ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _go_version() -> str | None:
    try:
        return gobuild.go_version()
    except (ConformanceError, OSError, subprocess.SubprocessError):
        return None


def save(
    path: Path,
    kubernetes: Sequence[str],
    only: Sequence[str],
    build: bool,
    progress: Progress,
) -> tuple[list[Entry], int]:
    """Write the bundle; (its entries, its size in bytes)."""
    if not path.parent.is_dir():
        raise BundleError(
            f"{path.parent} is not a directory", "give a FILE in an existing directory"
        )
    wanted = entries.needed(kubernetes, only)
    missing = [n for n in wanted if not n.present()]
    if missing and build:
        for n in missing:
            n.build(progress)
        missing = [n for n in missing if not n.present()]
    if missing:
        alone = [f"`{n.how}`" for n in missing if n.how]
        raise BundleError(
            f"not built yet: {', '.join(n.entry.name for n in missing)}; nothing written",
            f"run `dra-conformance bundle save {path} --build` to build them first"
            + (f" (or {', '.join(alone)})" if alone else ""),
        )
    chosen = [n.entry for n in wanted]
    commit, go = _commit(), _go_version()

    def manifest_for(members: Mapping[str, Member]) -> Manifest:
        return Manifest(suite_version(), commit, tuple(kubernetes), go, tuple(chosen), members)

    size = archive.write(path, chosen, manifest_for, progress)
    return chosen, size


def _verified(path: Path, staging: Path, progress: Progress) -> Manifest:
    text, found = archive.read(path, staging, progress)
    manifest = Manifest.from_json(text, str(path))
    wrong = problems(manifest, found)
    if wrong:
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        raise BundleError(
            f"{path} is corrupt, nothing installed: {wrong[0]}{more}",
            "copy the file again, or make it again with `dra-conformance bundle save`",
        )
    return manifest


def _lookups(manifest: Manifest, progress: Progress) -> dict[str, entries.Needed]:
    """This checkout's entries of the bundle's names, or none when they cannot be computed
    here (no Go for the Go components' keys): the bundle's own keys are used then."""
    known = (*entries.NAMES, *(f"node:{k}" for k in manifest.kubernetes))
    names = [e.name for e in manifest.entries if e.name in known]
    try:
        return {n.entry.name: n for n in entries.needed(manifest.kubernetes, names)}
    except ConformanceError as exc:
        progress.note(f"cannot compute this checkout's keys ({exc.problem}); installing as is")
        return {}


def _install(entry: Entry, staged: Path) -> None:
    try:
        if entry.kind == "image":
            archive.load_image(staged)
        else:
            archive.install_dir(staged, entries.install_root(entry))
    except (DockerException, OSError) as exc:
        raise BundleError(
            f"installing {entry.name} ({entry.location}) failed: {exc}",
            "the entries listed before it are installed; fix the cause and load again",
        ) from exc


def _present(entry: Entry, lookup: entries.Needed | None) -> bool:
    if lookup is not None and lookup.entry == entry:
        return lookup.present()
    return entry.kind == "image" and docker_client.image_exists(entry.location)


def load(path: Path, progress: Progress) -> LoadResult:
    """Verify the bundle, then install each entry this machine lacks."""
    if not path.is_file():
        raise BundleError(f"{path}: no such file", "give the path of a file `bundle save` wrote")
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="bundle-load-", dir=root))
    try:
        with progress.stage(f"verify {path}"):
            manifest = _verified(path, staging, progress)
        here = _lookups(manifest, progress)
        result = LoadResult()
        result.not_found = key_changes(manifest, {n: h.entry for n, h in here.items()})
        for entry in manifest.entries:
            if _present(entry, here.get(entry.name)):
                result.skipped.append(entry.name)
                continue
            with progress.stage(f"install {entry.name} ({entry.location})"):
                _install(entry, archive.staged_file(staging, entry))
            result.installed.append(entry.name)
        return result
    finally:
        shutil.rmtree(staging, ignore_errors=True)
