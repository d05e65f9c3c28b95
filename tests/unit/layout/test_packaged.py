"""Every package of the checkout is in pyproject's package list: `pip install .` (the wheel,
the suite image) ships only what the list names, and a package missing there is an ImportError
on a fresh install, not in a checkout."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _listed() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(config["tool"]["setuptools"]["packages"])


def _packages(top: Path, name: str) -> set[str]:
    found = set()
    for init in top.rglob("__init__.py"):
        parts = init.parent.relative_to(top).parts
        if "_gen" in parts or "__pycache__" in parts:
            continue
        found.add(".".join((name, *parts)))
    return found


def test_every_package_is_in_pyprojects_list() -> None:
    packages = _packages(ROOT / "conformance", "conformance") | _packages(
        ROOT / "drivers/fake/fakedriver", "fakedriver"
    )
    missing = sorted(packages - _listed())
    assert missing == [], f"add to [tool.setuptools] packages in pyproject.toml: {missing}"


def test_the_list_names_no_package_that_is_gone() -> None:
    listed = _listed() - {"conformance._suite"}
    gone = sorted(p for p in listed if not _is_package(p))
    assert gone == [], f"listed in pyproject.toml but not in the checkout: {gone}"


def _is_package(name: str) -> bool:
    head, *rest = name.split(".")
    top = ROOT / ("drivers/fake/fakedriver" if head == "fakedriver" else head)
    return (top.joinpath(*rest) / "__init__.py").is_file()
