"""A sealed run, through the real command line: code from outside the suite (a plugin through
`-p` or `$PYTEST_PLUGINS`, a conftest.py beside an extra path) is refused before anything runs,
with exit 2 and a report directory that holds no verdict; an option's value is never taken for
a test path; a refused run leaves no older output behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.flipper import write_flipper

from conformance.cli import app, driver_commands
from conformance.cli.sealed_run import check_run_arguments, collected_paths
from conformance.report.seal import loaded_code, refused_option
from conformance.suite_root import SUITE_ROOT

SCENARIOS = SUITE_ROOT / "scenarios"
PROFILE = str(SUITE_ROOT / "drivers/fake/profile.yaml")


def _cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    write_flipper(tmp_path)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    environ["PYTHONPATH"] = str(tmp_path)
    return subprocess.run(
        [sys.executable, "-m", "conformance.cli", "run", "--profile", PROFILE, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**environ, **(env or {})},
        cwd=tmp_path,
    )


def _refused(result: subprocess.CompletedProcess, what: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(f"dra-conformance: error: {what}"), result.stderr
    assert "CONFORMANT" not in result.stdout + result.stderr


def test_a_plugin_through_p_is_refused(tmp_path: Path) -> None:
    report = tmp_path / "report"
    _refused(_cli(tmp_path, "--report-dir", str(report), "-p", "flipper"), "`run` does not take")
    assert not report.exists()  # nothing left behind
    _refused(_cli(tmp_path, "-pflipper"), "`run` does not take '-pflipper'")


def test_a_plugin_through_pytest_plugins_is_refused(tmp_path: Path) -> None:
    result = _cli(tmp_path, env={"PYTEST_PLUGINS": "flipper"})
    _refused(result, "$PYTEST_PLUGINS is set ('flipper')")


def test_a_conftest_beside_an_extra_path_is_refused(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "conftest.py").write_text("pytest_plugins = ['flipper']\n")
    _refused(_cli(tmp_path, str(extra)), f"{extra} is outside the suite's scenario tree")


@pytest.mark.parametrize(
    "option", ["-c", "--rootdir=x", "-o", "--override-ini=a=b", "--pyargs", "--confcutdir"]
)
def test_options_that_relocate_code_or_configuration_are_refused(option: str) -> None:
    assert refused_option(["-k", "x", option, "v"]) == option


def test_option_values_are_not_test_paths() -> None:
    args = ["--deselect", "scenarios/core/test_core_slices.py::t", "-k", "scenarios/x"]
    assert collected_paths(args) == []
    parsed = app.parse_args(
        app.build_parser([driver_commands.add_run_command]), ["run", "--profile", "p", *args]
    )
    argv = driver_commands.pytest_arguments(parsed, "r1", Path("reports/r1"))
    assert argv[-1] == str(driver_commands.SCENARIOS)  # the whole tree, not the project's tests
    assert check_run_arguments([str(SCENARIOS / "core"), "-n", "2"], SCENARIOS) == [
        str(SCENARIOS / "core")
    ]


def test_a_refused_run_leaves_no_older_output(tmp_path: Path) -> None:
    report = tmp_path / "report"
    (report / "allure-results").mkdir(parents=True)
    (report / "allure-results/environment.properties").write_text("Verdict=CONFORMANT\n")
    (report / "charts").mkdir()
    (report / "charts/latency.svg").write_text("<svg/>")
    (report / "summary.json").write_text(json.dumps({"verdict": "CONFORMANT", "run": {}}))
    environ = {"KUBECONFIG": ""}
    result = _cli(tmp_path, "--cluster", "existing", "--report-dir", str(report), env=environ)
    _refused(result, "--cluster existing needs a kubeconfig")
    assert sorted(p.name for p in report.iterdir()) == ["summary.json", "summary.md"]
    assert json.loads((report / "summary.json").read_text())["verdict"] == "NO-VERDICT"


class _Module:
    def __init__(self, name: str, file: str) -> None:
        self.__name__, self.__file__ = name, file


def test_the_plugin_manager_tells_foreign_code_from_the_suite(tmp_path: Path) -> None:
    plugins = [
        ("dra_conformance", _Module("conformance.plugin", "x/conformance/plugin/__init__.py")),
        ("xdist", _Module("xdist.plugin", "x/xdist/plugin.py")),
        ("flipper", _Module("flipper", str(tmp_path / "flipper.py"))),
        (str(SCENARIOS / "conftest.py"), _Module("conftest", str(SCENARIOS / "conftest.py"))),
        (str(tmp_path / "conftest.py"), _Module("conftest", str(tmp_path / "conftest.py"))),
        ("cacheprovider", None),
    ]
    found = loaded_code(plugins, SCENARIOS)
    assert found["plugins"] == ["conformance.plugin", "flipper", "xdist.plugin"]
    assert found["conftests"] == [str(tmp_path / "conftest.py"), "scenarios/conftest.py"]
    assert found["foreign"] == [
        f"a conftest.py from outside the suite was loaded: {tmp_path / 'conftest.py'}",
        "a pytest plugin from outside the suite was loaded: flipper (flipper)",
    ]
