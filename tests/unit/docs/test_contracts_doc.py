"""docs/CONTRACTS.md's package layers are pyproject.toml's `[tool.importlinter]` contract, read
from both files at test time, and the document names no import-linter setting the project does
not use."""

from __future__ import annotations

import importlib
import re

import pytest

from unit.docs.contracts import (
    ROOT,
    conformance_layers,
    fenced_blocks,
    importlinter,
    parse_layer,
    section,
)

CONTRACTS = ROOT / "docs" / "CONTRACTS.md"
# import-linter's configuration keys (the tool's and its contracts'): a document naming one the
# project does not set describes a configuration that is not there.
SETTINGS = {
    "root_package",
    "root_packages",
    "include_external_packages",
    "exclude_type_checking_imports",
    "cache_dir",
    "containers",
    "exhaustive",
    "exhaustive_ignores",
    "ignore_imports",
    "unmatched_ignore_imports_alerting",
    "allow_indirect_imports",
    "source_modules",
    "forbidden_modules",
    "as_packages",
}


def documented_layers() -> list[frozenset[str]]:
    body = section(CONTRACTS.read_text(), "Package layers")
    blocks = fenced_blocks(body)
    assert blocks, "docs/CONTRACTS.md, Package layers: no fenced block of layers"
    return [parse_layer(line) for line in blocks[0].splitlines() if line.strip()]


def used_settings() -> set[str]:
    config = importlinter()
    used = set(config)
    for contract in config["contracts"]:
        used |= set(contract)
    return used


def test_the_documented_layers_are_pyproject_s() -> None:
    documented, declared = documented_layers(), conformance_layers()
    assert documented == declared, (
        "docs/CONTRACTS.md's layers differ from pyproject.toml's: copy "
        f"{[' | '.join(sorted(layer)) for layer in declared]} into its Package layers block"
    )


def test_every_layer_is_a_module_of_the_package() -> None:
    for name in set().union(*conformance_layers()):
        path = ROOT / "conformance" / name
        assert path.is_dir() or path.with_suffix(".py").is_file(), name


def test_the_document_names_only_settings_in_use() -> None:
    named = set(re.findall(r"`(\w+)`", CONTRACTS.read_text())) & SETTINGS
    assert not named - used_settings(), f"not in pyproject.toml: {named - used_settings()}"


def test_the_contracts_it_names_exist() -> None:
    ids = {c["id"] for c in importlinter()["contracts"]}
    text = section(CONTRACTS.read_text(), "Package layers")
    named = set(re.findall(r"contract \(`([\w-]+)`", text))
    assert named, "docs/CONTRACTS.md names no contract as: contract (`<id>`, ...)"
    assert named <= ids, f"docs/CONTRACTS.md names contracts pyproject.toml lacks: {named - ids}"


@pytest.mark.parametrize("text", ["a | b", " a|b ", "b | a"])
def test_a_layer_is_a_set_of_names(text: str) -> None:
    assert parse_layer(text) == {"a", "b"}


# Generated, never committed: a clean checkout has it only after the fake driver's image build.
GENERATED = {"drivers/fake/fakedriver/_gen/"}


def _exists(path: str) -> bool:
    if path in GENERATED:
        return True
    base = ROOT / path.rstrip("/")
    return base.exists() or base.with_suffix(".py").is_file()


def _module_exists(dotted: str) -> bool:
    """`conformance.report.outcomes.mark_suite_test`: the longest importable prefix is a
    module, and the rest are attributes of it."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


def test_every_module_and_path_it_names_exists() -> None:
    text = CONTRACTS.read_text()
    paths = re.findall(r"`((?:conformance|scenarios|drivers|docs|tests)/[\w./-]*)`", text)
    dotted = re.findall(r"`(conformance(?:\.\w+)+)", text)
    assert len(paths) + len(dotted) > 30
    gone = [p for p in paths if "<" not in p and not _exists(p)]
    gone += [d for d in dotted if not _module_exists(d)]
    assert not gone, f"docs/CONTRACTS.md names what does not exist: {sorted(set(gone))}"


def test_a_module_that_moved_is_caught() -> None:
    assert _module_exists("conformance.report.outcomes.mark_suite_test")
    assert not _module_exists("conformance.report.no_such_module")
    assert not _module_exists("conformance.report.outcomes.no_such_function")
