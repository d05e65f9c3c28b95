"""The command line's modules: a subcommand that cannot be imported is an error, not a command
that silently goes missing, and no subcommand module imports the command line back."""

from __future__ import annotations

import grimp
import pytest

from conformance.cli import app

ENTRY_POINTS = {"conformance.cli", "conformance.cli.__main__"}


def test_a_subcommand_that_fails_to_import_is_an_error(monkeypatch) -> None:
    def broken() -> list:
        raise ImportError("No module named 'conformance.cli.verify_command'")

    monkeypatch.setattr(app, "_extra_commands", broken)
    with pytest.raises(ImportError, match="verify_command"):
        app.main(["verify", "somewhere"])


def test_no_subcommand_module_imports_the_command_line_back() -> None:
    graph = grimp.build_graph("conformance", cache_dir=None)
    importers = graph.find_modules_that_directly_import("conformance.cli.app")
    assert importers - ENTRY_POINTS == set(), sorted(importers)
