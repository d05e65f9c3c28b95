"""Where a scenario helper lives: `conformance/scenario_api/` holds what two or more scenario
suites use, or the pytest plugin, or another scenario_api module; a helper of one suite lives in
that suite's directory (`scenarios/<suite>/<name>_checks.py`, imported by its bare name as the
suite's tests do). Read from the source (AST): function-level imports count."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
API = "conformance.scenario_api"
API_DIR = ROOT / "conformance" / "scenario_api"
SCENARIOS = ROOT / "scenarios"
PLUGIN_DIR = ROOT / "conformance" / "plugin"
SHARED = "scenarios/conftest.py"  # seen by every suite


def api_modules_imported(source: str) -> set[str]:
    """The scenario_api modules (bare names) `source` imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        else:
            continue
        found |= {n.split(".")[2] for n in names if n.startswith(f"{API}.")}
    return found


def _user(path: Path) -> str:
    """Who a file is, for the rule: a suite (`scenarios/<suite>`), the shared conftest, the
    plugin, or a scenario_api module."""
    relative = path.relative_to(ROOT).as_posix()
    if relative == SHARED:
        return f"every suite ({SHARED})"
    if relative.startswith("scenarios/"):
        return "scenarios/" + relative.split("/")[1]
    if path.is_relative_to(PLUGIN_DIR):
        return "conformance.plugin"
    if path.is_relative_to(API_DIR):
        return f"{API}.{path.stem}"
    return relative


def users_of_api_modules(files: Iterable[Path]) -> dict[str, dict[str, set[str]]]:
    """scenario_api module -> user -> the files of that user importing it."""
    users: dict[str, dict[str, set[str]]] = {}
    for path in files:
        for module in api_modules_imported(path.read_text()):
            user = _user(path)
            if user != f"{API}.{module}":
                users.setdefault(module, {}).setdefault(user, set()).add(path.name)
    return users


def misplaced(modules: Iterable[str], users: dict[str, dict[str, set[str]]]) -> list[str]:
    """The scenario_api modules that break the rule, each with its single user."""
    problems = []
    for module in sorted(modules):
        by = users.get(module, {})
        shared = [u for u in by if not u.startswith("scenarios/")]
        if shared or len(by) >= 2:
            continue
        if not by:
            problems.append(f"{API}.{module} is used by no suite: remove it")
            continue
        ((suite, files),) = by.items()
        problems.append(
            f"{API}.{module} is used by {suite} only ({', '.join(sorted(files))}): move it "
            f"to {suite}/{module}_checks.py"
        )
    return problems


def _files() -> list[Path]:
    return sorted(
        [*SCENARIOS.rglob("*.py"), *PLUGIN_DIR.rglob("*.py"), *API_DIR.glob("*.py")],
    )


def test_each_scenario_api_module_serves_two_suites_or_the_harness() -> None:
    modules = [p.stem for p in API_DIR.glob("*.py") if p.stem != "__init__"]
    assert len(modules) > 10
    problems = misplaced(modules, users_of_api_modules(_files()))
    assert not problems, "; ".join(problems)


def test_a_module_of_one_suite_is_named_with_that_suite() -> None:
    users = {
        "pods": {"scenarios/lifecycle": {"test_a.py"}, "conformance.plugin": {"fixtures.py"}},
        "disruption": {"scenarios/node_drain": {"test_b.py"}, "scenarios/core": {"test_c.py"}},
        "slice_watch": {"scenarios/lifecycle": {"test_d.py", "test_e.py"}},
        "driver_restarts": {_user(ROOT / SHARED): {"conftest.py"}},
    }
    modules = ["pods", "disruption", "slice_watch", "driver_restarts", "unused"]
    assert misplaced(modules, users) == [
        f"{API}.slice_watch is used by scenarios/lifecycle only (test_d.py, test_e.py): move it "
        "to scenarios/lifecycle/slice_watch_checks.py",
        f"{API}.unused is used by no suite: remove it",
    ]


def test_imports_are_read_in_every_form() -> None:
    source = (
        "from conformance.scenario_api.pods import PodOps\n"
        "from conformance.scenario_api import workloads\n"
        "import conformance.scenario_api.placement\n"
        "def f():\n    from conformance.scenario_api.cdi_specs import read_node_cdi\n"
        "from conformance.model import devices\n"
    )
    assert api_modules_imported(source) == {"pods", "workloads", "placement", "cdi_specs"}
