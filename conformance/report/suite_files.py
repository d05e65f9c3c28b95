"""The whole suite as installed, against its reference: does the code that ran equal the suite?

The scenario tree alone is not the suite: the plugin decides outcomes (conformance/), the root
conftest.py and pyproject.toml are loaded by every run. Their state is read against the
reference the installation has: what is committed (git HEAD) in a checkout, else the sha256 of
each file in the package's RECORD (what pip installed). A file edited, added or removed since is
named, and makes the run modified (conformance/report/provenance.py).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import io
import subprocess
import tarfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from conformance.suite_root import SUITE_ROOT

PACKAGE = "dra-conformance"
CODE_DIR = "conformance"
SCENARIOS_DIR = "scenarios"
ROOT_FILES = ("conftest.py", "pyproject.toml")
SUITE_PATHS = (CODE_DIR, SCENARIOS_DIR, *ROOT_FILES)
SCENARIO_SUFFIXES = (".py", ".yaml")


def _counted(rel: str) -> bool:
    parts = rel.split("/")
    if "__pycache__" in parts or rel.endswith(".pyc"):
        return False
    if parts[0] == SCENARIOS_DIR:
        return rel.endswith(SCENARIO_SUFFIXES)
    return parts[0] == CODE_DIR or rel in ROOT_FILES


def present_files(root: Path) -> Iterator[tuple[str, bytes]]:
    """The suite's files under `root` as (relative posix path, content)."""
    for top in SUITE_PATHS:
        base = root / top
        paths = [base] if base.is_file() else sorted(base.rglob("*")) if base.is_dir() else []
        for path in paths:
            rel = path.relative_to(root).as_posix()
            if path.is_file() and _counted(rel):
                yield rel, path.read_bytes()


def _git(root: Path, *args: str) -> bytes | None:
    try:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def committed_files(root: Path) -> dict[str, bytes] | None:
    """The suite's files as committed at HEAD, or None when `root` is no git checkout."""
    if not (root / ".git").exists():
        return None
    listed = _git(root, "ls-tree", "--name-only", "HEAD", *SUITE_PATHS)
    if listed is None:
        return None
    paths = listed.decode().split()  # git archive refuses a path HEAD does not have
    archive = _git(root, "archive", "--format=tar", "HEAD", *paths) if paths else b""
    if archive is None:
        return None
    if not archive:
        return {}
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is not None and _counted(member.name):
                files[member.name] = handle.read()
    return files


def sha256_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_digest(path: str | Path) -> str | None:
    """ "sha256:<hex>" of a file, None when there is none (a missing known-issue list is empty)."""
    try:
        return sha256_of(Path(path).read_bytes())
    except OSError:
        return None


def tree_digest(files: Iterable[tuple[str, bytes]]) -> tuple[str, int]:
    """(digest, file count) over (relative posix path, content) pairs, in path order."""
    digest = hashlib.sha256()
    count = 0
    for rel, data in sorted(files):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).hexdigest().encode() + b"\n")
        count += 1
    return "sha256:" + digest.hexdigest(), count


def _record_mismatches() -> tuple[list[str], bool]:
    """Files of the installed package that differ from its RECORD: (names, had a reference)."""
    try:
        files = importlib.metadata.files(PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        return [], False
    found, checked = [], 0
    for entry in files:
        if entry.hash is None or entry.hash.mode != "sha256" or entry.parts[0] != CODE_DIR:
            continue
        checked += 1
        try:
            data = Path(str(entry.locate())).read_bytes()
        except OSError:
            found.append(f"{entry} (missing)")
            continue
        actual = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        if actual != entry.hash.value:
            found.append(str(entry))
    return sorted(found), checked > 0


def suite_state(root: Path = SUITE_ROOT) -> dict[str, Any]:
    """summary.json's `provenance.suite`: the digest of the suite's files as they ran, the
    reference they were compared with, and the files that differ from it."""
    present = dict(present_files(root))
    committed = committed_files(root)
    state: dict[str, Any] = {"sha256": tree_digest(present.items())[0], "files": len(present)}
    if committed is not None:
        head = _git(root, "rev-parse", "HEAD")
        edited = sorted(
            rel
            for rel in committed.keys() | present.keys()
            if committed.get(rel) != present.get(rel)
        )
        state |= {
            "reference": "git",
            "commit": head.decode().strip() if head else None,
            "clean": not edited,
            "edited": edited,
        }
        return state
    edited, had_reference = _record_mismatches()
    state |= {
        "reference": "package record" if had_reference else "none",
        "commit": None,
        "clean": not edited if had_reference else None,
        "edited": edited,
    }
    return state


def edited_reason(state: dict[str, Any]) -> str | None:
    """Why the suite's own files make the run modified, or None."""
    edited = state.get("edited") or []
    if not edited:
        return None
    against = "the committed suite" if state.get("reference") == "git" else "the installed package"
    more = f" and {len(edited) - 1} more" if len(edited) > 1 else ""
    return f"{len(edited)} file(s) of the suite differ from {against}: {edited[0]}{more}"
