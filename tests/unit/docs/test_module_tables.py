"""Every package of `conformance/` lists its modules in a table in its `__init__` docstring
(README.md, Layout): a module missing from its package's table, or a row naming a module that
does not exist, fails here by name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "conformance"
# A table row: its first cell is one backticked name, `module` or `folder/`.
ROW = re.compile(r"^\|\s*`([A-Za-z_][\w]*/?)`\s*\|", re.MULTILINE)


def packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts)


def listed(package: Path) -> set[str]:
    """The names the first column of the package docstring's table gives."""
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    return set(ROW.findall(docstring))


def present(package: Path) -> set[str]:
    """Its modules (no dunder ones) and its subpackages, as a table names them."""
    modules = {p.stem for p in package.glob("*.py") if not p.stem.startswith("__")}
    subpackages = {f"{p.parent.name}/" for p in package.glob("*/__init__.py")}
    return modules | subpackages


def _id(package: Path) -> str:
    return package.relative_to(ROOT).as_posix()


def test_every_package_is_found() -> None:
    names = {_id(p) for p in packages()}
    assert {"conformance", "conformance/kube", "conformance/report"} <= names


@pytest.mark.parametrize("package", packages(), ids=_id)
def test_the_table_names_every_module(package: Path) -> None:
    missing = sorted(present(package) - listed(package))
    assert not missing, f"{_id(package)}/__init__.py: its module table lacks {', '.join(missing)}"


@pytest.mark.parametrize("package", packages(), ids=_id)
def test_the_table_names_only_what_exists(package: Path) -> None:
    table = listed(package)
    gone = sorted(
        name
        for name in table
        if not (package / f"{name}.py").is_file() and not (package / name.rstrip("/")).is_dir()
    )
    assert not gone, f"{_id(package)}/__init__.py: its module table names {', '.join(gone)}"


def test_a_missing_module_is_named(tmp_path: Path) -> None:
    table = "| module | owns |\n|---|---|\n| `a` | x |\n"
    (tmp_path / "__init__.py").write_text(f'"""T.\n\n{table}"""\n')
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.py").write_text("")
    assert present(tmp_path) - listed(tmp_path) == {"b"}
