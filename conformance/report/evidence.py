"""`evidence.tar.gz`: what a vendor publishes — summary, JUnit, Allure results, diagnostics.

Every text file is passed through `redact_text_of` on its way into the archive, so a token that
slipped into a diagnostics dump or a captured log never leaves the machine. The HTML report is
not included (it is derived from allure-results and large).
"""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Iterable
from pathlib import Path

from conformance.model.naming import file_safe
from conformance.observe.redact import redact_text_of

EVIDENCE = "evidence.tar.gz"
DIAGNOSTICS = "diagnostics"
DEFAULT_MEMBERS = ("summary.json", "summary.md", "junit.xml", "allure-results", DIAGNOSTICS)


def diagnostics_of(run_dir: str, nodeid: str) -> str | None:
    """`diagnostics/<test>` relative to the run directory when the run collected diagnostics
    for the test (it does when the test fails with a namespace), else None."""
    if not run_dir:
        return None
    relative = f"{DIAGNOSTICS}/{file_safe(nodeid)}"
    return relative if (Path(run_dir) / relative).is_dir() else None


def build_evidence(
    run_dir: Path,
    *,
    members: Iterable[str] = DEFAULT_MEMBERS,
    extra_dirs: dict[str, Path] | None = None,
    output: Path | None = None,
) -> Path:
    """Write the archive (top folder `<run dir name>/`) and return its path.

    `members` are paths relative to the run directory (missing ones are left out); `extra_dirs`
    maps archive names to directories elsewhere (e.g. an --alluredir outside the run dir).
    """
    run_dir = Path(run_dir)
    output = output or run_dir / EVIDENCE
    top = run_dir.name or "run"
    sources: list[tuple[str, Path]] = [(m, run_dir / m) for m in members]
    sources.extend((name, path) for name, path in (extra_dirs or {}).items())
    tmp = output.with_name(output.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for arcname, source in sources:
            if source.is_symlink() or not source.exists():
                continue
            files = [source] if source.is_file() else sorted(source.rglob("*"))
            for path in files:
                if path.is_symlink() or not path.is_file():
                    continue
                rel = arcname if path == source else f"{arcname}/{path.relative_to(source)}"
                _add_file(tar, path, f"{top}/{rel}")
    tmp.replace(output)
    return output


def _add_file(tar: tarfile.TarFile, path: Path, arcname: str) -> None:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass  # binary attachment (screenshot): kept as is
    else:
        data = redact_text_of(arcname, text).encode("utf-8")
    info = tarfile.TarInfo(arcname)
    info.size = len(data)
    info.mtime = int(path.stat().st_mtime or time.time())
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))
