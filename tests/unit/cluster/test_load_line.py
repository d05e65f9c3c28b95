"""`load … done` is printed only once kind said the load worked; a failed load prints FAILED
and kind's own message, never `done` first."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from conformance.cluster import kind_images
from conformance.errors import BuildError
from conformance.progress import Progress


def _kind(tmp_path: Path, code: int, stderr: str) -> Path:
    """A stand-in for the kind binary: prints `stderr` and exits with `code`."""
    script = tmp_path / "kind"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.stderr.write({stderr!r})\nsys.exit({code})\n"
    )
    script.chmod(0o755)
    return script


@pytest.fixture
def no_node_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kind_images, "node_has_image", lambda node, ref: False)


def test_a_failed_load_never_says_done(tmp_path: Path, no_node_has_it: None, monkeypatch) -> None:
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path))
    out = io.StringIO()
    kind = _kind(tmp_path, 1, 'ERROR: image: "img:1" not present locally\n')
    with pytest.raises(BuildError, match='into cluster c1 failed:\nERROR: image: "img:1" not'):
        kind_images.load_into_cluster(kind, "c1", ["c1-worker"], "img:1", Progress(out, None))
    lines = out.getvalue().splitlines()
    assert "load img:1 into 1 node(s) ..." in lines[0]
    assert "load img:1 into 1 node(s) FAILED after" in lines[-1]
    assert "done" not in out.getvalue()


def test_a_load_that_worked_says_done(tmp_path: Path, no_node_has_it: None, monkeypatch) -> None:
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path))
    out = io.StringIO()
    kind = _kind(tmp_path, 0, "")
    kind_images.load_into_cluster(kind, "c1", ["a", "b"], "img:1", Progress(out, None))
    assert "load img:1 into 2 node(s) done (" in out.getvalue().splitlines()[-1]
