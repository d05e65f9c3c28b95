"""docs/DESIGN.md cannot drift from the tree: it names every package of `conformance/`, its
layers are pyproject.toml's import-linter contract (read at test time), and every module or
path it names exists."""

from __future__ import annotations

import re

from unit.docs.contracts import ROOT, conformance_layers, fenced_blocks, parse_layer, section

DESIGN = ROOT / "docs" / "DESIGN.md"
# `plugin/session.py`, `conformance/report/verdict`, `drivers/fake/profile.yaml`, ...
PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)+[\w.-]*)")
TOP_LEVEL = ("conformance", "scenarios", "drivers", "docs", "tests", "deploy", "bench")


def packages() -> list[str]:
    return sorted(p.parent.name for p in (ROOT / "conformance").glob("*/__init__.py"))


def resolves(name: str) -> bool:
    """A path as the document writes it: from the root, from docs/, or inside conformance/."""
    name = name.rstrip("/")
    for base in (ROOT, ROOT / "docs", ROOT / "conformance"):
        path = base / name
        if path.exists() or path.with_suffix(".py").is_file():
            return True
    return False


def named_paths(text: str) -> set[str]:
    found = set()
    for name in PATH.findall(text):
        first = name.split("/")[0]
        if first in TOP_LEVEL or first in packages() or first == "..":
            found.add(name)
    return found


def test_every_package_is_named() -> None:
    text = DESIGN.read_text()
    missing = [p for p in packages() if f"`conformance/{p}/`" not in text]
    assert not missing, f"docs/DESIGN.md, The packages: no row for {missing}"


def test_the_readme_layout_names_every_package() -> None:
    layout = section((ROOT / "README.md").read_text(), "Layout")
    missing = [p for p in packages() if f"| `conformance/{p}/` |" not in layout]
    assert not missing, f"README.md, Layout: no row for {missing}"


def test_its_layers_are_pyproject_s() -> None:
    block = fenced_blocks(section(DESIGN.read_text(), "The layers"))[0]
    documented = [parse_layer(line) for line in block.splitlines() if line.strip()]
    assert documented == conformance_layers(), "docs/DESIGN.md's layers differ from pyproject"


def test_every_path_it_names_exists() -> None:
    names = named_paths(DESIGN.read_text())
    assert len(names) > 20, sorted(names)
    gone = sorted(n for n in names if not resolves(n.removeprefix("../")))
    assert not gone, f"docs/DESIGN.md names paths that do not exist: {gone}"


def test_a_moved_module_is_caught() -> None:
    assert named_paths("see `plugin/session.py` and report/nowhere.py") == {
        "plugin/session.py",
        "report/nowhere.py",
    }
    assert resolves("plugin/session.py") and not resolves("report/nowhere.py")
