"""Small modules and short functions in `conformance/` and the scenario suites (`scenarios/`):
a module over 400 lines or a function over 80 lines is split along its concerns, not let grow.
Read from the source (AST), so a function's length is its `def` line to its last line, nested
functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "conformance"
SCENARIOS = ROOT / "scenarios"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
# The option declarations are one long, flat list of `addoption` calls: splitting them by length
# would only scatter them.
FUNCTION_LENGTH_EXEMPT = {"conformance/plugin/options.py"}


def _modules() -> list[Path]:
    return sorted([*PACKAGE.rglob("*.py"), *SCENARIOS.rglob("*.py")])


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def module_lines(source: str) -> int:
    return len(source.splitlines())


def long_functions(source: str, limit: int) -> dict[str, int]:
    """Every function (methods and nested ones too) longer than `limit` lines, by qualified name."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    length = (child.end_lineno or child.lineno) - child.lineno + 1
                    if length > limit:
                        found[name] = length
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def test_the_package_and_the_suites_have_modules_to_measure() -> None:
    modules = _modules()
    assert len(modules) > 100
    assert any(path.is_relative_to(SCENARIOS) for path in modules)


def test_no_module_is_over_400_lines() -> None:
    too_long = {
        _name(path): lines
        for path in _modules()
        if (lines := module_lines(path.read_text())) > MAX_MODULE_LINES
    }
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines (split by concern): {too_long}"


def test_no_function_is_over_80_lines() -> None:
    too_long: dict[str, int] = {}
    for path in _modules():
        if _name(path) in FUNCTION_LENGTH_EXEMPT:
            continue
        for name, lines in long_functions(path.read_text(), MAX_FUNCTION_LINES).items():
            too_long[f"{_name(path)}::{name}"] = lines
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines: {too_long}"


@pytest.mark.parametrize("body_lines, expected", [(77, {}), (78, {"outer": 81})])
def test_a_function_is_measured_from_def_to_its_last_line(
    body_lines: int, expected: dict[str, int]
) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(body_lines))
    source = f"@decorator\ndef outer(\n    a,\n):\n{body}\n\ndef short():\n    pass\n"
    assert long_functions(source, MAX_FUNCTION_LINES) == expected


def test_methods_and_nested_functions_are_measured_by_their_qualified_name() -> None:
    body = "".join(f"            y{i} = {i}\n" for i in range(81))
    source = f"class Box:\n    def method(self):\n        def inner():\n{body}"
    assert long_functions(source, MAX_FUNCTION_LINES) == {"Box.method": 83, "Box.method.inner": 82}


def test_a_module_is_measured_in_lines() -> None:
    assert module_lines("a = 1\n" * 401) == 401
