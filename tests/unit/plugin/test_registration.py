"""The plugin is registered once, by its entry point, and the root conftest adds nothing
(conftest.py at the repository root says why)."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

import conformance.plugin
from conformance.suite_root import SUITE_ROOT


def test_the_entry_point_names_the_plugin() -> None:
    found = [ep.value for ep in entry_points(group="pytest11") if ep.name == "dra_conformance"]
    assert found == ["conformance.plugin"]


def test_the_plugin_is_registered_once(pytestconfig: pytest.Config) -> None:
    names = [
        name
        for name, plugin in pytestconfig.pluginmanager.list_name_plugin()
        if plugin is conformance.plugin
    ]
    assert len(names) == 1, names


def test_the_root_conftest_is_loaded_and_defines_nothing(pytestconfig: pytest.Config) -> None:
    root_conftest = Path(SUITE_ROOT) / "conftest.py"
    module = pytestconfig.pluginmanager.get_plugin(str(root_conftest))
    assert module is not None, f"{root_conftest} was not loaded"
    # what pytest's assertion rewriting adds ("@py_builtins") is no identifier
    defined = [n for n in vars(module) if n.isidentifier() and not n.startswith("__")]
    assert defined == []
