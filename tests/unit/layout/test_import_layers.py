"""The import contracts, declared once in pyproject.toml (`[tool.importlinter]`), hold: a module
imports only from layers below its own, function-level imports included, and what a forbidden
contract rules out is never imported. The check runs `lint-imports` itself, on the checkout
(every contract kept) and on copies with one import that breaks a contract (each can fail)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FAKE_DRIVER = Path("drivers/fake")


def contract_names(root: Path) -> list[str]:
    config = tomllib.loads((root / "pyproject.toml").read_text())
    return [c["name"] for c in config["tool"]["importlinter"]["contracts"]]


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the `conformance` and `fakedriver` packages under `root`, with `root`'s
    pyproject.toml (the fake driver is importable from drivers/fake, as `make lint` has it)."""
    program = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / FAKE_DRIVER)])}
    return subprocess.run(
        [str(program), "--no-logo", "--no-cache", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _copy_of_checkout(dest: Path) -> Path:
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")
    for package in (Path("conformance"), FAKE_DRIVER / "fakedriver"):
        shutil.copytree(
            ROOT / package,
            dest / package,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_gen"),
        )
    return dest


def test_every_contract_holds() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    names = contract_names(ROOT)
    assert f"Contracts: {len(names)} kept, 0 broken." in result.stdout, result.stdout
    kept = set(re.findall(r"^(.+) KEPT", result.stdout, re.MULTILINE))
    assert kept == set(names), f"contracts not checked: {set(names) - kept}"


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


def test_a_report_reading_the_cluster_breaks_two_contracts(tmp_path: Path) -> None:
    copy = _copy_of_checkout(tmp_path)
    (copy / "conformance" / "report" / "live_nodes.py").write_text(
        "def nodes(k8s):\n"
        "    from conformance.kube import node_info  # a report reads what the run recorded\n\n"
        "    return node_info\n"
    )
    result = lint_imports(copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "conformance layers BROKEN" in result.stdout
    assert "report does not import kube, run, cluster, node_access or Docker BROKEN" in (
        result.stdout
    )
    assert "conformance.report.live_nodes -> conformance.kube.node_info" in result.stdout


def test_model_evaluating_selectors_itself_breaks_the_contract(tmp_path: Path) -> None:
    copy = _copy_of_checkout(tmp_path)
    devices = copy / "conformance" / "model" / "devices.py"
    devices.write_text(
        devices.read_text() + "\n\ndef evaluator():\n"
        "    from conformance.cel import cel_evaluator  # a lazy import counts too\n\n"
        "    return cel_evaluator()\n"
    )
    result = lint_imports(copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "model does not import cel, gobuild or kube BROKEN" in result.stdout
    assert "conformance.model.devices -> conformance.cel" in result.stdout


def test_the_harness_naming_the_fake_driver_breaks_the_contract(tmp_path: Path) -> None:
    copy = _copy_of_checkout(tmp_path)
    (copy / "conformance" / "cli" / "driver_faults.py").write_text(
        "def control(core):\n"
        "    from fakedriver.client.channel import FakeDriverControl  # only through a profile\n\n"
        "    return FakeDriverControl(core)\n"
    )
    result = lint_imports(copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "conformance does not import fakedriver BROKEN" in result.stdout
    assert "conformance.cli.driver_faults -> fakedriver.client.channel" in result.stdout


def test_the_fake_driver_importing_the_harness_breaks_the_contract(tmp_path: Path) -> None:
    copy = _copy_of_checkout(tmp_path)
    slices = copy / FAKE_DRIVER / "fakedriver" / "slices.py"
    slices.write_text(slices.read_text() + "\nfrom conformance.model import naming  # noqa\n")
    result = lint_imports(copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "fakedriver does not import conformance BROKEN" in result.stdout
    assert "fakedriver.slices -> conformance.model.naming" in result.stdout


def test_an_honest_module_reaching_a_misbehaviour_breaks_the_contract(tmp_path: Path) -> None:
    copy = _copy_of_checkout(tmp_path)
    cdi = copy / FAKE_DRIVER / "fakedriver" / "cdi.py"
    cdi.write_text(cdi.read_text() + "\nfrom fakedriver.misbehave import cdi as hooks  # noqa\n")
    result = lint_imports(copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "fakedriver.misbehave is imported only at its hook points BROKEN" in result.stdout
    assert "fakedriver.cdi -> fakedriver.misbehave.cdi" in result.stdout
