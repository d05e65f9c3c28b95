"""What `dra-conformance run` hands to pytest, sealed: no code or configuration from outside the
suite gets in through the command line or pytest's environment variables.

The run loads only its allow-list of plugins (conformance/report/seal.py) with autoload off;
options that load or relocate code or configuration, pytest's own code-loading variables and
test paths outside the suite's scenario tree are refused before anything runs (exit 2). What
pytest will take as test paths is asked of pytest's own parser, so an option's value (`--deselect
scenarios/x.py::t`, `-k EXPR`) is never mistaken for one.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from conformance.errors import ConformanceError
from conformance.report.seal import (
    PYTEST_CODE_ENV,
    SEALED_PLUGINS,
    refused_option,
    sealed_environment,
)

REMEDY_OPTION = (
    "a certification run loads only the suite's code and configuration; drop it (select "
    "tests with a path under scenarios/, -k, -m, --deselect or --dra-requirement)"
)


_PARSE = """
import json, sys
from _pytest.config import get_config
config = get_config([])
for module in json.loads(sys.argv[1]):
    config.pluginmanager.import_plugin(module, consider_entry_points=True)
print(json.dumps(config._parser.parse_known_args(json.loads(sys.argv[2])).file_or_dir))
"""


def collected_paths(args: Sequence[str]) -> list[str]:
    """The arguments pytest would take as test paths (`file_or_dir`), by pytest's own parser
    with the sealed plugins' options known. In a child process: a plugin module imported here
    could no longer be assertion-rewritten by the run's pytest (it warns in every run)."""
    if not args:
        return []
    result = subprocess.run(
        [sys.executable, "-c", _PARSE, json.dumps(SEALED_PLUGINS), json.dumps(list(args))],
        capture_output=True,
        text=True,
        timeout=120,
        env=sealed_environment(os.environ),
    )
    if result.returncode != 0:
        raise ConformanceError(
            f"pytest could not read the run's arguments {shlex.join(args)}: "
            f"{(result.stderr.strip().splitlines() or ['no message'])[-1]}",
            "check the options after the profile (dra-conformance run --help)",
        )
    return list(json.loads(result.stdout))


def _inside(path: str, tree: Path) -> bool:
    target = Path(path.split("::", 1)[0]).resolve()
    return target.is_relative_to(tree.resolve())


def check_run_arguments(args: Sequence[str], scenario_tree: Path) -> list[str]:
    """The test paths among `args`, after refusing what would bring foreign code into the run."""
    if option := refused_option(args):
        raise ConformanceError(f"`run` does not take {option!r}", REMEDY_OPTION)
    paths = collected_paths([a for a in args if a != "--"])
    for path in paths:
        if not _inside(path, scenario_tree):
            raise ConformanceError(
                f"{path} is outside the suite's scenario tree ({scenario_tree.name}/): a run "
                "collects only the suite's own tests",
                f"give a path under {scenario_tree.name}/, or select with -k or --dra-requirement",
            )
    return paths


def check_environment(environ: Mapping[str, str]) -> None:
    """Refuse pytest's code-loading variables: a sealed run takes code from the suite only."""
    for name in PYTEST_CODE_ENV:
        if environ.get(name):
            raise ConformanceError(
                f"${name} is set ({environ[name]!r}): it would load code or options into the run",
                f"unset it for a certification run (env -u {name} dra-conformance run ...)",
            )
