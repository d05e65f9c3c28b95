"""The harness reaches the bundled fake driver like any vendor's, through its profile: no module
of `conformance/` imports `fakedriver`, by an import statement (function-level ones included) or
by name through importlib. Read from the source (AST), so a comment or a help text naming the
driver's files is not an import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "conformance"
DRIVER_PACKAGE = "fakedriver"
_IMPORTERS = {"import_module", "__import__", "find_spec"}


def _is_driver(module: str) -> bool:
    return module == DRIVER_PACKAGE or module.startswith(f"{DRIVER_PACKAGE}.")


def _dynamic_import(node: ast.Call) -> str | None:
    """The literal module name of `importlib.import_module("x")`, `__import__("x")` and the like."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in _IMPORTERS or not node.args:
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def driver_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of the fake driver's package in `source`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if _is_driver(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found += [(node.lineno, node.module)] if _is_driver(node.module or "") else []
        elif isinstance(node, ast.Call):
            module = _dynamic_import(node) or ""
            found += [(node.lineno, module)] if _is_driver(module) else []
    return sorted(found)


def test_no_harness_module_imports_the_fake_driver() -> None:
    offenders = [
        f"{path.relative_to(ROOT).as_posix()}:{line} imports {module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, module in driver_imports(path.read_text())
    ]
    assert not offenders, (
        "the harness must reach the fake driver through its profile only (its fault methods, "
        f"its install): {'; '.join(offenders)}"
    )


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import fakedriver\n", [(1, "fakedriver")]),
        (
            "def f():\n    from fakedriver.client.channel import X\n",
            [(2, "fakedriver.client.channel")],
        ),
        (
            "import importlib\nimportlib.import_module('fakedriver.client')\n",
            [(2, "fakedriver.client")],
        ),
        ("__import__('fakedriver')\n", [(1, "fakedriver")]),
        ("import fakedriverx\nfrom . import fakedriver\n", []),
        ("HELP = 'entryPoint fakedriver.client.faults:FakeDriverFaults'\n", []),
    ],
)
def test_imports_are_found_wherever_they_are(source: str, expected: list[tuple[int, str]]) -> None:
    assert driver_imports(source) == expected
