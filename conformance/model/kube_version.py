"""Kubernetes versions (`v1.37.2`, `1.36`, `v1.38.0-beta.0`, a server's gitVersion) as
`packaging.version.Version`, so they compare like releases.

A gitVersion is semver with Kubernetes' own suffixes, packaging reads PEP 440; the text is
brought to that form first:
- `alpha.N`, `beta.N`, `rc.N` are pre-releases: `1.38.0-beta.0` sorts before `1.38.0`. A CI
  build N commits after a pre-release tag (`v1.38.0-alpha.1.123+0f3c2a1`) sorts after that tag
  and before the next (a post-release of it).
- Any other suffix is a vendor's build of the release (`-eks-3f1a`, `+k3s1`, `-gke.1200`) and
  equals it: a platform bug of 1.36.2 is in every vendor's 1.36.2.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

__all__ = ["Version", "minor", "parse", "parse_minor", "show"]

# Kubernetes' pre-release labels, in PEP 440 spelling
_PRE_RELEASES = {"alpha": "a", "beta": "b", "rc": "rc"}
_LABELS = {short: long for long, short in _PRE_RELEASES.items()}


def parse(text: Any) -> Version | None:
    """'v1.37.2' / '1.36' / '1.38.0-beta.0' / 'v1.36.2-eks-3f1a' -> a Version; None for
    anything else (not a string, one or four numbers, spaces, an empty suffix)."""
    if not isinstance(text, str):
        return None
    core, _, build = text.strip().partition("+")
    release, dash, suffix = core.removeprefix("v").partition("-")
    numbers = release.split(".")
    if not 2 <= len(numbers) <= 3 or not all(_decimal(n) for n in numbers):
        return None
    if (dash and not _identifiers(suffix)) or any(c.isspace() for c in build):
        return None
    label, *counts = suffix.split(".")
    pre = ""
    if label in _PRE_RELEASES and len(counts) <= 2 and all(_decimal(n) for n in counts):
        pre = _PRE_RELEASES[label] + (counts[0] if counts else "0")
        pre += f".post{counts[1]}" if len(counts) == 2 else ""
    return Version(release + pre)  # digits and a known label: always valid PEP 440


def parse_minor(text: Any) -> tuple[int, int] | None:
    """'1.35' / 'v1.35' (a minor and nothing else, as a catalog writes `min_version`) ->
    (1, 35); None otherwise."""
    if not isinstance(text, str) or text != text.strip():
        return None
    version = parse(text)
    if version is None or len(version.release) != 2 or any(c in text for c in "-+"):
        return None
    return version.major, version.minor


def minor(text: Any) -> tuple[int, int] | None:
    """The (major, minor) of any version `parse` reads: 'v1.37.0-beta.0+abc' -> (1, 37)."""
    version = parse(text)
    return None if version is None else (version.major, version.minor)


def show(version: Version) -> str:
    """How a version is written back in a message: '1.36.0', '1.38.0-beta.0'."""
    major, minor_, patch = (*version.release, 0, 0)[:3]
    text = f"{major}.{minor_}.{patch}"
    if version.pre is not None:
        label, number = version.pre
        text += f"-{_LABELS[label]}.{number}"
        text += f".{version.post}" if version.post is not None else ""
    return text


def _decimal(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _identifiers(suffix: str) -> bool:
    """semver's pre-release identifiers: non-empty, ASCII letters, digits, dots and hyphens."""
    return bool(suffix) and all(c.isascii() and (c.isalnum() or c in ".-") for c in suffix)
