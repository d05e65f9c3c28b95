"""`dra-conformance run`: its own options are recognised wherever they stand, everything else
goes to pytest in the order given, and what it passes to the plugin is `--dra-*` only."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import app, driver_commands


def _run(*argv: str) -> tuple[argparse.Namespace, list[str]]:
    args = app.parse_args(app.build_parser([driver_commands.add_run_command]), ["run", *argv])
    return args, driver_commands.pytest_arguments(args, "r1", Path("/reports/r1"))


def test_own_options_after_pytest_options_are_still_recognised() -> None:
    args, argv = _run("--profile", "p.yaml", "--dra-requirement", "X", "--report-dir", "D")
    assert args.report_dir == "D" and args.profile == "p.yaml"
    assert args.pytest_args == ["--dra-requirement", "X"]
    assert "--report-dir" not in argv
    assert argv[argv.index("--dra-requirement") + 1] == "X"


def test_pytest_arguments_keep_their_order_around_own_options() -> None:
    args, _ = _run("-k", "slow", "--profile", "p.yaml", "scenarios/core", "-n", "2", "-x")
    assert (args.profile, args.workers) == ("p.yaml", "2")
    assert args.pytest_args == ["-k", "slow", "scenarios/core", "-x"]


def test_no_abbreviation_turns_a_pytest_option_into_ours() -> None:
    args, _ = _run("--profile", "p.yaml", "--co", "--run")  # not --context, not --run-id
    assert args.context is None and args.run_id is None
    assert args.pytest_args == ["--co", "--run"]


def test_after_double_dash_everything_goes_to_pytest() -> None:
    args, argv = _run("--profile", "p.yaml", "--", "--report-dir=D")
    assert args.report_dir is None
    assert argv[-2] == "--report-dir=D"  # then scenarios/: no path was given
    assert "--" not in argv


def test_the_cluster_target_reaches_the_plugin_as_dra_options() -> None:
    _, argv = _run(
        "--profile", "p.yaml", "--cluster", "existing", "--kubeconfig", "k", "--context", "c"
    )
    assert argv[argv.index("--dra-kubeconfig") + 1] == "k"
    assert argv[argv.index("--dra-context") + 1] == "c"
    assert "--kubeconfig" not in argv and "--context" not in argv


def test_other_commands_still_refuse_unknown_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        app.parse_args(app.build_parser(), ["cluster", "status", "--dra-requirement", "X"])
    assert "unrecognized arguments: --dra-requirement X" in capsys.readouterr().err


def test_run_imports_no_pytest_plugin_before_pytest_loads_it() -> None:
    # pytest warns in every run ("Module already imported so cannot be rewritten: xdist")
    # when the CLI imported a plugin module before calling pytest.main
    code = (
        "import sys, conformance.cli.driver_commands, conformance.plugin.run_progress; "
        "print(sorted(m for m in ('xdist', 'allure_pytest') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
