"""CONTRIBUTING.md names, for each step, the test that fails when the step is left out: every
test file and test function it names exists, so a renamed test cannot leave a step unguarded
on paper only."""

from __future__ import annotations

import re

from unit.docs.contracts import ROOT

CONTRIBUTING = ROOT / "CONTRIBUTING.md"
# tests/unit/x/test_y.py, optionally ::test_name (and ::test_more in the same cell)
CELL_TESTS = re.compile(r"`(tests/[\w/]+\.py)((?:::\w+)?)`((?:, `::\w+`)*)")


def named_tests(text: str) -> dict[str, set[str]]:
    """Test file -> the test functions named with it (`file::name`, then `::name`s)."""
    found: dict[str, set[str]] = {}
    for path, first, more in CELL_TESTS.findall(text):
        names = {first[2:]} if first else set()
        names |= set(re.findall(r"`::(\w+)`", more))
        found.setdefault(path, set()).update(names)
    return found


def test_every_named_test_exists() -> None:
    named = named_tests(CONTRIBUTING.read_text())
    assert len(named) >= 10, named
    missing = []
    for path, functions in named.items():
        source = ROOT / path
        if not source.is_file():
            missing.append(path)
            continue
        text = source.read_text()
        missing += [f"{path}::{f}" for f in functions if f"def {f}(" not in text]
    assert not missing, f"CONTRIBUTING.md names tests that do not exist: {missing}"


def test_a_cell_with_several_tests_is_read() -> None:
    cell = "`tests/unit/a.py::test_one`, `::test_two`, `::test_three`"
    assert named_tests(cell) == {"tests/unit/a.py": {"test_one", "test_two", "test_three"}}
