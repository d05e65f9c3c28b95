"""The documents a newcomer reads first point only to files that exist: their Markdown links,
and in scenarios/README.md every repository path it names (it once cited a specification that
is not in the repository)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from unit.docs.contracts import ROOT

DOCS = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "docs" / "DESIGN.md",
    ROOT / "docs" / "CONTRACTS.md",
    ROOT / "scenarios" / "README.md",
    *sorted((ROOT / "bench").glob("*.md")),
]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
REPO_PATH = re.compile(
    r"`((?:conformance|scenarios|drivers|docs|tests|deploy|bench|shared|spec)/[\w./-]*)`"
)


def links(text: str) -> list[str]:
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+://", t)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_resolves(doc: Path) -> None:
    broken = [t for t in links(doc.read_text()) if not (doc.parent / t).exists()]
    assert not broken, f"{doc.relative_to(ROOT)} links to files that do not exist: {broken}"


def test_the_scenarios_readme_names_only_paths_that_exist() -> None:
    text = (ROOT / "scenarios" / "README.md").read_text()
    named = REPO_PATH.findall(text)
    gone = [p for p in named if not (ROOT / p.rstrip("*").rstrip("/")).exists() and "*" not in p]
    assert not gone, f"scenarios/README.md names paths that do not exist: {gone}"


def test_a_dangling_link_is_found() -> None:
    assert links("[spec](../shared/spec/requirements.md) [web](https://x.io) [a](#b)") == [
        "../shared/spec/requirements.md"
    ]
