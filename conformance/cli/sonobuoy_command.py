"""`dra-conformance sonobuoy-plugin`: the Sonobuoy Job plugin's process (deploy/sonobuoy/).

Runs the suite in the cluster as the pod's service account, adds the requirement-level JUnit
file Sonobuoy reads beside our report (summary, junit.xml, Allure, evidence), packs the report
into a tarball in Sonobuoy's results directory and writes that tarball's path into the `done`
file, which is what tells Sonobuoy's worker to collect it. The done file is written whatever
the run ended with (a run with no verdict still hands its summary back), and the command then
exits 0: the verdict is in the tarball, and a failing container would only make Sonobuoy report
the plugin as errored without its results.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

from conformance.suite_root import bundled

RESULTS_DIR = "/tmp/sonobuoy/results"  # Sonobuoy's contract with its plugins
ARGS_ENV = "DRA_CONFORMANCE_ARGS"  # extra `run` arguments, e.g. from `sonobuoy run --plugin-env`
PROFILE_ENV = "DRA_PROFILE"
DEFAULT_PROFILE = "drivers/fake/profile.yaml"
TARBALL = "dra-conformance.tar.gz"


def add_sonobuoy_command(sub: argparse._SubParsersAction) -> None:
    plugin = sub.add_parser(
        "sonobuoy-plugin",
        help="run the suite in-cluster as a Sonobuoy plugin (deploy/sonobuoy/dra-conformance.yaml)",
        description="Run `dra-conformance run --cluster in-cluster`, then leave the report as "
        "a tarball in the results directory with a requirement-level JUnit file "
        f"(sonobuoy-junit.xml), and write its path into <results-dir>/done. ${ARGS_ENV} adds "
        "run arguments (for example scenarios/core); always exits 0 once the done file is "
        "written.",
    )
    plugin.add_argument(
        "--profile",
        type=bundled,
        default=os.environ.get(PROFILE_ENV) or DEFAULT_PROFILE,
        metavar="FILE",
        help=f"driver profile (default ${PROFILE_ENV}, else {DEFAULT_PROFILE})",
    )
    plugin.add_argument("--results-dir", type=Path, default=Path(RESULTS_DIR))
    plugin.set_defaults(func=_plugin, pytest_args=[])


def _write_requirements_junit(report_dir: Path) -> None:
    from conformance.report.sonobuoy import FILE_NAME, requirements_junit

    summary_path = report_dir / "summary.json"
    try:
        summary = json.loads(summary_path.read_text())
    except (OSError, ValueError) as exc:
        summary = {"verdict": "NO-VERDICT", "verdict_text": f"no summary.json: {exc}"}
    (report_dir / FILE_NAME).write_text(requirements_junit(summary))


def _pack(report_dir: Path, tarball: Path) -> None:
    with tarfile.open(tarball, "w:gz") as tar:
        for path in sorted(report_dir.iterdir()):
            tar.add(path, arcname=path.name)


def _run_parser(add_run: Callable[[argparse._SubParsersAction], None]) -> argparse.ArgumentParser:
    """The command line with its `run` command only: all the plugin starts."""
    parser = argparse.ArgumentParser(prog="dra-conformance")
    add_run(parser.add_subparsers(dest="command", required=True))
    return parser


def _plugin(args: argparse.Namespace) -> int:
    from conformance.cli.argv import dispatch, parse_args
    from conformance.cli.driver_commands import add_run_command

    results: Path = args.results_dir
    report_dir = results / "dra-conformance"
    report_dir.mkdir(parents=True, exist_ok=True)
    run_args = [
        "run",
        "--cluster",
        "in-cluster",
        "--profile",
        args.profile,
        "--report-dir",
        str(report_dir),
        *shlex.split(os.environ.get(ARGS_ENV, "")),
        *args.pytest_args,
    ]
    print(f"dra-conformance sonobuoy-plugin: {shlex.join(run_args)}", flush=True)
    try:
        code = dispatch(parse_args(_run_parser(add_run_command), run_args))
        print(f"dra-conformance sonobuoy-plugin: run exited {code}", flush=True)
    finally:
        _write_requirements_junit(report_dir)
        tarball = results / TARBALL
        _pack(report_dir, tarball)
        (results / "done").write_text(str(tarball))
        print(f"dra-conformance sonobuoy-plugin: results in {tarball}", file=sys.stderr)
    return 0
