"""`bundle save` then `bundle load` into an empty cache, with the real Docker engine: afterwards
the run's own "is it built?" lookups find every entry, so a run here builds nothing; a file
with one flipped byte is refused in one line and installs nothing. Docker images other people
use are never removed: an image already in the engine is reported as skipped, and its presence
is checked through the SDK. No cluster is needed."""

from __future__ import annotations

import functools
import shutil
import tarfile
import uuid
from pathlib import Path

import pytest

from conformance import docker_client
from conformance.bundle import archive, entries
from conformance.bundle.manifest import MANIFEST_MEMBER, Entry, Manifest, problems
from conformance.cache import CACHE_ENV
from conformance.cli.app import main
from conformance.images import harness
from conformance.progress import Progress
from conformance.report.allure_html import NPM_PREFIX_ENV

SMALL = "kind,workload,dra-cel"
Capture = pytest.CaptureFixture[str]


@pytest.fixture(scope="module")
def small_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bundle") / "small.tar"
    assert main(["bundle", "save", str(path), "--only", SMALL, "--build"]) == 0
    return path


def _empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    root = tmp_path / name
    monkeypatch.setenv(CACHE_ENV, str(root))
    monkeypatch.setenv(NPM_PREFIX_ENV, str(root / "npm"))
    return root


def test_the_manifest_records_each_entrys_key_and_sha256(small_bundle: Path) -> None:
    with tarfile.open(small_bundle) as tar:
        names = tar.getnames()
        manifest = Manifest.from_json(tar.extractfile(MANIFEST_MEMBER).read(), "bundle")
    assert names[-1] == MANIFEST_MEMBER
    wanted = {n.entry.name: n.entry for n in entries.needed(only=SMALL.split(","))}
    assert {e.name: e for e in manifest.entries} == wanted
    assert set(manifest.members) == {e.member for e in manifest.entries} == set(names[:-1])
    assert all(len(m.sha256) == 64 and m.size > 0 for m in manifest.members.values())


def test_a_loaded_bundle_leaves_nothing_to_build(
    small_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    root = _empty_cache(tmp_path, monkeypatch, "cache")
    before = entries.needed(only=SMALL.split(","))
    assert not any(n.present() for n in before if n.entry.kind == "dir")
    capsys.readouterr()
    assert main(["bundle", "load", str(small_bundle)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "installed kind" in out and "installed dra-cel" in out
    assert "skipped workload (present)" in out  # the engine had it: left as it was
    # The lookups a run makes: every entry is found, so nothing would be built.
    assert [n.entry.name for n in entries.needed(only=SMALL.split(",")) if not n.present()] == []
    kind = next(n for n in before if n.entry.name == "kind")
    assert (root / kind.entry.location / "kind").stat().st_mode & 0o111
    assert docker_client.image_exists(entries.needed(only=["workload"])[0].entry.location)
    assert not list(root.glob("bundle-load-*")), "the staging directory is left behind"
    # A second load is a no-op.
    assert main(["bundle", "load", str(small_bundle)]) == 0
    assert all(line.startswith("skipped ") for line in capsys.readouterr().out.splitlines())


def test_a_corrupted_bundle_is_refused_and_installs_nothing(
    small_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    broken = tmp_path / "broken.tar"
    shutil.copyfile(small_bundle, broken)
    with tarfile.open(broken) as tar:
        kind = tar.getmember("dirs/kind.tar")
    with open(broken, "r+b") as f:  # one byte in the middle of kind's member
        f.seek(kind.offset_data + kind.size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    root = _empty_cache(tmp_path, monkeypatch, "cache")
    capsys.readouterr()
    assert main(["bundle", "load", str(broken)]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if not ln.startswith("[")]
    assert err[0].startswith(f"dra-conformance: error: {broken} is corrupt, nothing installed: ")
    assert "dirs/kind.tar: sha256" in err[0]
    assert err[1].startswith("  -> copy the file again") and len(err) == 2
    assert not (root / "bin").exists() or not any((root / "bin").iterdir())
    assert not list(root.glob("bundle-load-*"))


def test_a_missing_entry_fails_save_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    _empty_cache(tmp_path, monkeypatch, "cache")
    path = tmp_path / "b.tar"
    capsys.readouterr()
    assert main(["bundle", "save", str(path), "--only", "kind,dra-cel"]) == 2
    err = capsys.readouterr().err
    assert "not built yet: kind, dra-cel; nothing written" in err
    assert "--build" in err and "dra-conformance cluster up" in err
    assert not path.exists() and not path.with_name("b.tar.partial").exists()


@pytest.mark.e2e_by_hand
def test_the_full_bundle_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything `make conformance` looks up (about 1.8 GB, bench/cold.md)."""
    path = tmp_path / "full.tar"
    assert main(["bundle", "save", str(path)]) == 0
    _empty_cache(tmp_path, monkeypatch, "cache")
    assert main(["bundle", "load", str(path)]) == 0
    assert [n.entry.name for n in entries.needed() if not n.present()] == []


def test_an_image_missing_from_docker_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The load path of an image the engine lacks, on a tag of this test's own (removing it
    only untags: the workload image it points at stays)."""
    _empty_cache(tmp_path, monkeypatch, "cache")
    workload = harness.build_workload_image(Progress(heartbeat_s=None))
    ref = f"localhost/dra-conformance/bundle-test:{uuid.uuid4().hex[:12]}"
    client = docker_client.client()
    client.images.get(workload).tag(*ref.rsplit(":", 1))
    entry = Entry("bundle-test", "image", ref.rsplit(":", 1)[1], ref)
    path = tmp_path / "one-image.tar"
    manifest = functools.partial(Manifest, "0", None, ("v1.37.2",), None, (entry,))
    archive.write(path, [entry], manifest, Progress(heartbeat_s=None))
    client.images.remove(ref, noprune=True)
    assert not docker_client.image_exists(ref)
    try:
        staging = tmp_path / "staging"
        staging.mkdir()
        text, found = archive.read(path, staging, Progress(heartbeat_s=None))
        assert problems(Manifest.from_json(text, str(path)), found) == []
        archive.load_image(archive.staged_file(staging, entry))
        assert docker_client.image_exists(ref)
        assert client.images.get(ref).id == client.images.get(workload).id
    finally:
        if docker_client.image_exists(ref):
            client.images.remove(ref, noprune=True)
