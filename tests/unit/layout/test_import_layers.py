"""The package layers, declared once as import-linter contracts in pyproject.toml
(`[tool.importlinter]`), hold: a module imports only from layers below its own, function-level
imports included. The check runs `lint-imports` itself, on the checkout and on a copy with one
import that breaks a layer (the check can fail)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the `conformance` package under `root`, with `root`'s pyproject.toml."""
    program = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(program), "--no-logo", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _copy_of_checkout(dest: Path) -> Path:
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")
    shutil.copytree(
        ROOT / "conformance",
        dest / "conformance",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return dest


def test_the_layers_contract_holds() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


def test_a_kube_module_importing_the_report_breaks_the_contract(tmp_path: Path) -> None:
    copy = _copy_of_checkout(tmp_path)
    assert lint_imports(copy).returncode == 0  # the copy alone is clean
    (copy / "conformance" / "kube" / "reporting.py").write_text(
        "def summary_path():\n"
        "    from conformance.report import summary  # kube must know no report format\n\n"
        "    return summary\n"
    )
    result = lint_imports(copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "conformance layers BROKEN" in result.stdout
    assert "conformance.kube.reporting -> conformance.report.summary" in result.stdout


def test_model_reaching_up_into_faults_breaks_the_contract(tmp_path: Path) -> None:
    copy = _copy_of_checkout(tmp_path)
    profile = copy / "conformance" / "model" / "profile.py"
    profile.write_text(profile.read_text() + "\nfrom conformance.faults import registry  # noqa\n")
    result = lint_imports(copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "conformance.model.profile -> conformance.faults.registry" in result.stdout


def test_scenario_code_using_docker_breaks_the_contract(tmp_path: Path) -> None:
    copy = _copy_of_checkout(tmp_path)
    (copy / "conformance" / "scenario_api" / "node_shell.py").write_text(
        "def node_container(name):\n"
        "    from conformance import docker_client  # nodes only through node_access\n\n"
        "    return docker_client.client().containers.get(name)\n"
    )
    result = lint_imports(copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "scenario-facing code does not use Docker BROKEN" in result.stdout
    assert "conformance.scenario_api.node_shell -> conformance.docker_client" in result.stdout
