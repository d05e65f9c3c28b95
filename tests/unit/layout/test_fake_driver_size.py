"""The fake driver is the reference vendors read: the same limits as `conformance/` (no module
over 400 lines, no function over 80), measured the same way. The generated gRPC stubs
(`_gen`) are not code anyone reads."""

from __future__ import annotations

from pathlib import Path

from unit.layout.test_code_size import (
    MAX_FUNCTION_LINES,
    MAX_MODULE_LINES,
    ROOT,
    long_functions,
    module_lines,
)

PACKAGE = ROOT / "drivers/fake/fakedriver"


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "_gen" not in p.relative_to(PACKAGE).parts)


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_driver_has_modules_to_measure() -> None:
    names = {_name(p) for p in _modules()}
    assert "drivers/fake/fakedriver/prepare.py" in names and len(names) > 20


def test_no_driver_module_is_over_400_lines() -> None:
    too_long = {
        _name(path): lines
        for path in _modules()
        if (lines := module_lines(path.read_text())) > MAX_MODULE_LINES
    }
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines (split by concern): {too_long}"


def test_no_driver_function_is_over_80_lines() -> None:
    too_long = {
        f"{_name(path)}::{name}": lines
        for path in _modules()
        for name, lines in long_functions(path.read_text(), MAX_FUNCTION_LINES).items()
    }
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines: {too_long}"
