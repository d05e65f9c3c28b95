"""The bundle file with directory entries only (no Docker): written with each member's sha256,
read back into a staging directory with the same sha256s, a flipped byte or a cut file found,
and a directory installed whole by rename."""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from conformance.bundle import archive
from conformance.bundle.manifest import BundleError, Entry, Manifest, Member, problems
from conformance.cache import CACHE_ENV
from conformance.progress import Progress

ENTRY = Entry("kind", "dir", "k1", "bin/kind-v0-k1")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(root))
    built = root / ENTRY.location
    built.mkdir(parents=True)
    (built / "kind").write_bytes(b"\x7fELF" + os.urandom(4096))
    (built / "kind").chmod(0o755)
    return root


def _manifest(members: Mapping[str, Member]) -> Manifest:
    return Manifest("0.1.0", None, ("v1.37.2",), None, (ENTRY,), dict(members))


def _write(cache: Path, tmp_path: Path) -> Path:
    path = tmp_path / "b.tar"
    archive.write(path, [ENTRY], _manifest, Progress(heartbeat_s=None))
    return path


def test_a_written_bundle_reads_back_intact(cache: Path, tmp_path: Path) -> None:
    path = _write(cache, tmp_path)
    staging = tmp_path / "staging"
    staging.mkdir()
    text, found = archive.read(path, staging, Progress(heartbeat_s=None))
    manifest = Manifest.from_json(text, str(path))
    assert manifest.entries == (ENTRY,)
    assert problems(manifest, found) == []
    assert archive.staged_file(staging, ENTRY).stat().st_size == found[ENTRY.member].size
    assert not path.with_name("b.tar.partial").exists()


def test_a_flipped_byte_is_found(cache: Path, tmp_path: Path) -> None:
    path = _write(cache, tmp_path)
    data = bytearray(path.read_bytes())
    data[2048 + 600] ^= 0xFF  # inside the first member's data, past its tar header
    path.write_bytes(bytes(data))
    staging = tmp_path / "staging"
    staging.mkdir()
    text, found = archive.read(path, staging, Progress(heartbeat_s=None))
    out = problems(Manifest.from_json(text, str(path)), found)
    assert len(out) == 1 and out[0].startswith("dirs/kind.tar: sha256 "), out


def test_a_cut_file_is_not_a_complete_bundle(cache: Path, tmp_path: Path) -> None:
    path = _write(cache, tmp_path)
    path.write_bytes(path.read_bytes()[:3000])
    staging = tmp_path / "staging"
    staging.mkdir()
    with pytest.raises(BundleError, match="is not a complete bundle|has no manifest.json"):
        archive.read(path, staging, Progress(heartbeat_s=None))


def test_a_directory_is_installed_whole_with_its_modes(cache: Path, tmp_path: Path) -> None:
    path = _write(cache, tmp_path)
    staging = tmp_path / "staging"
    staging.mkdir()
    archive.read(path, staging, Progress(heartbeat_s=None))
    target = tmp_path / "elsewhere" / "bin" / "kind-v0-k1"
    archive.install_dir(archive.staged_file(staging, ENTRY), target)
    assert (target / "kind").read_bytes() == (cache / ENTRY.location / "kind").read_bytes()
    assert os.access(target / "kind", os.X_OK)
    assert [p.name for p in target.parent.iterdir()] == ["kind-v0-k1"]  # no temporary left


def test_a_failed_install_leaves_nothing(tmp_path: Path) -> None:
    staged = tmp_path / "not-a-tar"
    staged.write_bytes(b"garbage" * 100)
    target = tmp_path / "bin" / "kind-v0-k1"
    with pytest.raises(Exception):  # noqa: B017 - whatever tarfile raises, nothing is left
        archive.install_dir(staged, target)
    assert list(target.parent.iterdir()) == []


def test_the_bytes_written_so_far_are_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "REPORT_EVERY_S", 0.0)
    shown = io.StringIO()
    out = archive.CountingWriter(io.BytesIO(), Progress(stream=shown, heartbeat_s=None))
    out.write(b"x" * 3_000_000)
    out.write(b"x" * 2_000_000)
    assert out.count == 5_000_000
    assert shown.getvalue().splitlines()[-1].endswith("]   5 MB written")
