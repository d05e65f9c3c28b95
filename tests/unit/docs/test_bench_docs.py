"""Every bench/*.md starts with its current figures (a table) and the command that reproduces
them; its dated history, if any, comes after, and no heading names a work period."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from unit.docs.contracts import ROOT, fenced_blocks, section

BENCH = sorted((ROOT / "bench").glob("*.md"))
# A reader finds the figures and the command without scrolling far.
TOP_LINES = 60
WORK_PERIOD = re.compile(r"^#+ .*\bsessions? \d", re.IGNORECASE | re.MULTILINE)


def top(path: Path) -> str:
    return "\n".join(path.read_text().splitlines()[:TOP_LINES])


def headings(text: str) -> list[str]:
    return re.findall(r"^## (\w+)", text, re.MULTILINE)


def test_the_bench_documents_are_found() -> None:
    assert {"suite.md", "cluster.md"} <= {p.name for p in BENCH}


@pytest.mark.parametrize("path", BENCH, ids=lambda p: p.name)
def test_current_figures_then_how_to_reproduce_them(path: Path) -> None:
    head = top(path)
    order = headings(head)
    assert "Current" in order, f"bench/{path.name}: no '## Current' in its first {TOP_LINES} lines"
    assert "Reproduce" in order, (
        f"bench/{path.name}: no '## Reproduce' in its first {TOP_LINES} lines"
    )
    assert re.search(r"^\|.*\|$", section(head, "Current"), re.MULTILINE), (
        f"bench/{path.name}: its Current section has no table"
    )
    commands = [b for b in fenced_blocks(section(path.read_text(), "Reproduce")) if b.strip()]
    assert commands, f"bench/{path.name}: its Reproduce section has no command block"


@pytest.mark.parametrize("path", BENCH, ids=lambda p: p.name)
def test_history_below_and_no_work_periods_in_headings(path: Path) -> None:
    order = headings(path.read_text())
    if "History" in order:
        assert order.index("History") > order.index("Reproduce"), f"bench/{path.name}"
    assert not WORK_PERIOD.findall(path.read_text()), f"bench/{path.name}: a heading names one"


def test_a_diary_fails() -> None:
    diary = "# Figures\n\n## Session 3 (2026-12-01)\n\n| a | b |\n"
    assert "Current" not in headings(diary) and WORK_PERIOD.search(diary)
