"""Local paths as a published report may show them: no machine's absolute paths.

A report is published as proof of a driver's conformance; where the suite, the working
directory or the user's home sat on the machine that ran it says nothing about the driver and
tells strangers about that machine. Paths under the suite's root or the working directory become
relative to it, paths under the home directory `~/...`; any other path is left as it is.

Only what is written into the report goes through here: the run itself keeps its absolute paths.
The result depends on where it is computed (suite root, working directory, home), so it is
applied once, when summary.json is built, and never when a report is re-rendered from it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from conformance.suite_root import SUITE_ROOT

# What ends a path inside free text: white space, quotes, and the separators of flags, lists and
# mappings (`--x=/p`, `a:/p`, `(/p)`, `{"k": "/p"}`).
_END = r"""\s'"`,;:=()\[\]{}<>|"""
# A root only counts where a path starts: not in the middle of a word, of another path or of a
# URL (`https://host/work`, `file:///work`).
_STARTS = r"(?<![\w./~-])"


def _roots() -> list[tuple[str, str]]:
    """(absolute root, what replaces it) in the order they are tried: the suite's root, the
    working directory, the home directory; each also in its symlink-free form."""
    found: list[tuple[str, str]] = []
    for root, replacement in (
        (SUITE_ROOT, "."),
        (_cwd(), "."),
        (_home(), "~"),
    ):
        if root is None:
            continue
        for form in dict.fromkeys((str(root), str(_resolved(root)))):
            form = form.rstrip("/")  # "/" itself becomes "": it would take every path
            if form and os.path.isabs(form) and form not in {r for r, _ in found}:
                found.append((form, replacement))
    return found


def _cwd() -> Path | None:
    try:
        return Path.cwd()
    except OSError:  # the working directory was removed
        return None


def _home() -> Path | None:
    try:
        return Path.home()
    except (KeyError, RuntimeError):  # no HOME and no passwd entry
        return None


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def _replace(rest: str, replacement: str) -> str:
    """`rest` (what followed the root: "" or "/...") under `replacement` ("." or "~")."""
    tail = rest.lstrip("/")
    if not tail:
        return replacement + ("/" if rest else "")
    return tail if replacement == "." else f"{replacement}/{tail}"


def _pattern(roots: Iterable[tuple[str, str]]) -> re.Pattern[str]:
    alternatives = "|".join(f"(?P<r{i}>{re.escape(root)})" for i, (root, _) in enumerate(roots))
    return re.compile(f"{_STARTS}(?:{alternatives})(?P<rest>/[^{_END}]*)?(?![^{_END}])")


def portable(text: str) -> str:
    """`text` with every absolute path under the suite's root, the working directory or the
    home directory rewritten: relative to the first two, `~/...` under the home directory.

    `--rootdir=/home/me/dra/scenarios` -> `--rootdir=scenarios` (run from /home/me/dra);
    `/home/me/profiles/x.yaml` -> `~/profiles/x.yaml`; `/etc/hosts` stays as it is.
    """
    roots = _roots()
    if not text or not roots:
        return text
    replacements = [replacement for _, replacement in roots]

    def rewrite(match: re.Match[str]) -> str:
        index = next(i for i in range(len(roots)) if match.group(f"r{i}") is not None)
        return _replace(match.group("rest") or "", replacements[index])

    return _pattern(roots).sub(rewrite, text)


def portable_path(path: str | os.PathLike[str]) -> str:
    """One path as `portable` shows it; a relative path, or one elsewhere, as it is.

    Unlike `portable`, the whole string is the path, so it may hold spaces or colons.
    """
    text = os.fspath(path)
    if not text or not os.path.isabs(text):
        return text
    for root, replacement in _roots():
        if text == root or text.startswith(root + "/"):
            return _replace(text[len(root) :], replacement)
    return text
