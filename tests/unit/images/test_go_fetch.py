"""A Go component's fetch (wrapper module set-up and module downloads) apart from its compile:
with the real go command on a local module (GOPROXY=off, nothing from the network), the fetch
marks its work directory with the component's key, a second fetch does nothing, and a
component with another key is not taken as fetched."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conformance import gobuild
from conformance.gobuild import GoComponent
from conformance.progress import Progress


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GoComponent:
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GOPROXY", "off")
    source = tmp_path / "tiny"
    (source / "cmd").mkdir(parents=True)
    (source / "go.mod").write_text("module example.com/tiny\n\ngo 1.22\n")
    (source / "cmd/main.go").write_text("package main\n\nfunc main() {}\n")
    return GoComponent(
        name="tiny",
        version="v1.0.0",
        module="example.com/tiny",
        packages=("example.com/tiny/cmd",),
        binaries=("tiny",),
        replaces=(("example.com/tiny", str(source)),),
    )


def test_a_fetch_marks_its_work_directory_once(tiny: GoComponent) -> None:
    assert not gobuild.is_fetched(tiny)
    gobuild.fetch(tiny, Progress(heartbeat_s=None))
    work = gobuild.work_dir(tiny)
    assert (work / gobuild.FETCHED).read_text() == tiny.key
    assert "example.com/tiny" in (work / "go.mod").read_text()
    assert not gobuild.is_built(tiny)  # nothing compiled: that is the build's part
    before = (work / gobuild.FETCHED).stat().st_mtime_ns
    gobuild.fetch(tiny, Progress(heartbeat_s=None))
    assert (work / gobuild.FETCHED).stat().st_mtime_ns == before


def test_another_build_of_the_same_version_is_not_taken_as_fetched(tiny: GoComponent) -> None:
    gobuild.fetch(tiny, Progress(heartbeat_s=None))
    other = dataclasses.replace(tiny, ldflags="-s -w -X main.x=y")
    assert gobuild.work_dir(other) == gobuild.work_dir(tiny)
    assert not gobuild.is_fetched(other)
