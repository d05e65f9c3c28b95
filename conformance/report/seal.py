"""A sealed run: only the suite's own code decides outcomes, and the report says what else ran.

`dra-conformance run` starts pytest with plugin autoload off and loads the allow-list below by
name, and refuses the options that load or relocate code or configuration. Whatever still gets
in (a plugin named in `$PYTEST_PLUGINS`, a conftest.py beside a collected path, a plain `pytest`
invocation with autoload on) is found at the end of the run by `foreign_code`, from what the
plugin manager actually holds, and marks the run modified (conformance/report/provenance.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from conformance.report.paths import portable_path
from conformance.report.suite_files import file_digest
from conformance.suite_root import SUITE_ROOT

AUTOLOAD_ENV = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"
# What a run loads, by the names of their `pytest11` entry points (so each is registered under
# the name it has when autoloaded): the suite's plugin, xdist with its looponfail, allure.
# pytest's own plugins come with pytest.
SEALED_PLUGINS = ("dra_conformance", "xdist", "xdist.looponfail", "allure_pytest")
# Top-level packages whose modules and objects may be registered as plugins.
ALLOWED_PACKAGES = frozenset(
    {"_pytest", "pytest", "pluggy", "conformance", "xdist", "allure_pytest", "allure_commons"}
)
# Options that load or relocate code or configuration: `run` refuses them.
REFUSED_OPTIONS = (
    "-p",
    "-c",
    "--config-file",
    "--rootdir",
    "--confcutdir",
    "-o",
    "--override-ini",
    "--pyargs",
    "--noconftest",
    "--plugins",
)
# Environment variables pytest itself reads to load code or add options.
PYTEST_CODE_ENV = ("PYTEST_PLUGINS", "PYTEST_ADDOPTS")
CEL_HELPER_ENV = "DRA_CEL_HELPER"
WORKLOAD_IMAGE_ENV = "DRA_WORKLOAD_IMAGE"
SONOBUOY_ARGS_ENV = "DRA_CONFORMANCE_ARGS"


def refused_option(args: Sequence[str]) -> str | None:
    """The first argument that would load or relocate code or configuration, or None."""
    for arg in args:
        if arg == "--":
            continue
        name = arg.split("=", 1)[0]
        for option in REFUSED_OPTIONS:
            short = len(option) == 2
            if name == option or (short and arg.startswith(option) and not arg.startswith("--")):
                return arg
    return None


def sealed_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a sealed pytest runs in: no entry-point plugin loads by itself."""
    return {**environ, AUTOLOAD_ENV: "1"}


def sealed_plugin_args() -> list[str]:
    """`-p NAME` for each plugin of the allow-list (pytest loads a `-p` name from its entry
    point even with autoload off)."""
    return [arg for module in SEALED_PLUGINS for arg in ("-p", module)]


def _top_package(module: str) -> str:
    return module.split(".", 1)[0]


def _is_conftest(plugin: Any) -> bool:
    return Path(str(getattr(plugin, "__file__", "") or "")).name == "conftest.py"


def _suite_conftest(path: Path, scenario_tree: Path) -> bool:
    resolved = path.resolve()
    if resolved == (SUITE_ROOT / "conftest.py").resolve():
        return True
    return resolved.is_relative_to(Path(scenario_tree).resolve())


def _module_of(plugin: Any) -> str:
    name = getattr(plugin, "__name__", None)
    if isinstance(name, str) and hasattr(plugin, "__file__"):
        return name  # a module registered as a plugin
    return type(plugin).__module__


def loaded_code(plugins: Iterable[tuple[str, Any]], scenario_tree: Path) -> dict[str, Any]:
    """What the plugin manager holds: {"plugins": [module, ...], "conftests": [path, ...],
    "foreign": [reason, ...]} (foreign: code from outside the suite and its allow-list)."""
    modules: set[str] = set()
    conftests: list[str] = []
    foreign: list[str] = []
    for name, plugin in plugins:
        if plugin is None:
            continue  # blocked with `-p no:NAME`
        if _is_conftest(plugin):
            path = Path(plugin.__file__)
            conftests.append(portable_path(path))
            if not _suite_conftest(path, scenario_tree):
                foreign.append(f"a conftest.py from outside the suite was loaded: {path}")
            continue
        module = _module_of(plugin)
        modules.add(module)
        if _top_package(module) not in ALLOWED_PACKAGES:
            foreign.append(f"a pytest plugin from outside the suite was loaded: {module} ({name})")
    return {
        "plugins": sorted(modules),
        "conftests": sorted(conftests),
        "foreign": sorted(set(foreign)),
    }


def recorded_inputs(environ: Mapping[str, str], timeout_scale: float) -> dict[str, Any]:
    """Inputs that change outcomes besides the profile and the command line."""
    helper = environ.get(CEL_HELPER_ENV) or None
    return {
        "pytest_plugins_env": environ.get("PYTEST_PLUGINS") or None,
        "pytest_addopts_env": environ.get("PYTEST_ADDOPTS") or None,
        "plugin_autoload": not environ.get(AUTOLOAD_ENV),
        "cel_helper": None if helper is None else {"path": helper, "sha256": file_digest(helper)},
        "workload_image_env": environ.get(WORKLOAD_IMAGE_ENV) or None,
        "sonobuoy_args_env": environ.get(SONOBUOY_ARGS_ENV) or None,
        "timeout_scale": timeout_scale,
    }


def input_reasons(inputs: Mapping[str, Any]) -> list[str]:
    """Why recorded inputs make a run modified: pytest told to load code or options by the
    environment."""
    reasons = []
    if inputs.get("pytest_plugins_env"):
        reasons.append(f"$PYTEST_PLUGINS loaded code into the run: {inputs['pytest_plugins_env']}")
    if inputs.get("pytest_addopts_env"):
        reasons.append(f"$PYTEST_ADDOPTS added options: {inputs['pytest_addopts_env']}")
    return reasons
