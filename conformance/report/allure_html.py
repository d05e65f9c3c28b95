"""The Allure HTML report, generated offline with Allure Report 3 (the npm package `allure`).

Install once (the only step that downloads anything):

    python -m conformance.report.allure_html install
    # = npm install --prefix ~/.cache/dra-conformance/npm --save-exact allure@3.18.0

Generate (offline; the collector does it at the end of a run):

    python -m conformance.report.allure_html generate reports/<run>/allure-results \
        reports/<run>/allure-report

The report is a single self-contained `index.html` (it opens from file://), with the Awesome
plugin's analytics script removed so that viewing it contacts nobody.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.cache import cache_root
from conformance.errors import ConformanceError
from conformance.report.allure import CATEGORIES

ALLURE_NPM_PACKAGE = "allure"
ALLURE_NPM_VERSION = "3.18.0"
NPM_PREFIX_ENV = "DRA_CONFORMANCE_NPM_PREFIX"
ALLURE_REPORT = "allure-report"
DEFAULT_REPORT_NAME = "DRA conformance"

_ANALYTICS = re.compile(
    r"<script[^>]*googletagmanager\.com[^>]*>\s*</script>\s*"
    r"(<script>\s*window\.dataLayer[\s\S]*?</script>)?"
)


class ReportToolMissing(ConformanceError):
    """node or the allure npm package is not installed; the message says what to install."""


class ReportGenerationError(ConformanceError):
    """allure generate failed; the message carries its output."""


@dataclass(frozen=True)
class AllureCli:
    node: str
    cli_js: Path
    version: str

    def command(self, *args: str) -> list[str]:
        return [self.node, str(self.cli_js), *args]


def npm_prefix() -> Path:
    """Where the npm package lives: `$DRA_CONFORMANCE_NPM_PREFIX`, else `npm/` of the build
    cache (`$DRA_CONFORMANCE_CACHE` included, so a bundle loaded into another cache finds it)."""
    env = os.environ.get(NPM_PREFIX_ENV)
    if env:
        return Path(env).expanduser()
    return cache_root() / "npm"


def install_command(prefix: Path | None = None) -> list[str]:
    prefix = prefix or npm_prefix()
    return [
        "npm",
        "install",
        "--prefix",
        str(prefix),
        "--save-exact",
        "--no-audit",
        "--no-fund",
        f"{ALLURE_NPM_PACKAGE}@{ALLURE_NPM_VERSION}",
    ]


def find_allure_cli(prefix: Path | None = None) -> AllureCli:
    """The installed Allure 3 CLI, or ReportToolMissing naming what to install."""
    prefix = prefix or npm_prefix()
    node = shutil.which("node")
    if node is None:
        raise ReportToolMissing(
            "node (Node.js) is not installed: it is needed to generate the Allure HTML report",
            "install it (Debian: apt-get install -y nodejs npm), then run: "
            + " ".join(install_command(prefix)),
        )
    package_dir = prefix / "node_modules" / ALLURE_NPM_PACKAGE
    cli_js = package_dir / "cli.js"
    try:
        version = str(json.loads((package_dir / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        version = ""
    if not cli_js.is_file() or not version:
        raise ReportToolMissing(
            f"the npm package '{ALLURE_NPM_PACKAGE}' (Allure Report 3) is not installed "
            f"under {prefix}",
            "run: "
            + " ".join(install_command(prefix))
            + f"  (or set ${NPM_PREFIX_ENV} to where it is installed)",
        )
    if not version.startswith("3."):
        raise ReportToolMissing(
            f"{package_dir} holds allure {version}, but Allure Report 3 is needed",
            "run: " + " ".join(install_command(prefix)),
        )
    return AllureCli(node=node, cli_js=cli_js, version=version)


def install_allure(prefix: Path | None = None, timeout_s: float = 600) -> AllureCli:
    """Install the npm package into the cache prefix (the installer's step; needs a registry)."""
    prefix = prefix or npm_prefix()
    if shutil.which("npm") is None:
        raise ReportToolMissing(
            "npm is not installed: it is needed once to install Allure Report 3",
            "install it (Debian: apt-get install -y nodejs npm)",
        )
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        install_command(prefix), capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if done.returncode != 0:
        raise ReportToolMissing(
            f"npm install of {ALLURE_NPM_PACKAGE}@{ALLURE_NPM_VERSION} failed "
            f"(exit {done.returncode}): {done.stderr.strip()[-2000:]}",
            "check the npm registry settings (npm config get registry) and retry",
        )
    return find_allure_cli(prefix)


# The tree: catalog suite, then "<requirement ID>: <statement>" (labels set by report/allure.py).
# Without groupBy, Allure 3 groups by the test files' paths.
TREE_GROUP_BY = ("parentSuite", "suite")


def report_config(output_dir: Path, report_name: str, categories: Sequence[Any]) -> dict[str, Any]:
    awesome = {
        "singleFile": True,
        "reportName": report_name,
        "groupBy": list(TREE_GROUP_BY),
        "defaultSortBy": "name,asc",  # requirements in ID order, not in the order they ran
    }
    return {
        "name": report_name,
        "output": str(output_dir),
        "categories": list(categories),
        "plugins": {"awesome": {"options": awesome}},
    }


def generate_html_report(
    results_dir: Path,
    output_dir: Path,
    *,
    report_name: str = DEFAULT_REPORT_NAME,
    categories: Sequence[Any] = CATEGORIES,
    cli: AllureCli | None = None,
    timeout_s: float = 300,
) -> Path:
    """Generate `<output_dir>/index.html` from an allure-results directory, offline."""
    results_dir = Path(results_dir).resolve()
    output_dir = Path(output_dir).resolve()
    if not results_dir.is_dir():
        raise ReportGenerationError(f"no Allure results directory at {results_dir}")
    cli = cli or find_allure_cli()
    if output_dir.exists():
        shutil.rmtree(output_dir)
    with tempfile.TemporaryDirectory(prefix="dra-allure-") as work:
        config_path = Path(work) / "allurerc.json"
        config_path.write_text(json.dumps(report_config(output_dir, report_name, categories)))
        env = dict(os.environ, ALLURE_NO_ANALYTICS="true", NO_UPDATE_NOTIFIER="1")
        try:
            done = subprocess.run(
                cli.command("generate", "--config", str(config_path), str(results_dir)),
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ReportGenerationError(
                f"allure generate did not finish within {timeout_s:.0f}s"
            ) from exc
    index = output_dir / "index.html"
    if done.returncode != 0 or not index.is_file():
        output = (done.stdout + done.stderr).strip()[-3000:]
        raise ReportGenerationError(
            f"allure generate failed (exit {done.returncode}, allure {cli.version}): {output}"
        )
    strip_analytics(index)
    return index


def strip_analytics(index_html: Path) -> None:
    """Remove the report's Google Analytics tags: the report must work and stay silent offline."""
    text = index_html.read_text(encoding="utf-8")
    cleaned = _ANALYTICS.sub("", text)
    if cleaned != text:
        index_html.write_text(cleaned, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.report.allure_html")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="install the allure npm package into the cache prefix")
    sub.add_parser("check", help="say whether node and the allure npm package are installed")
    gen = sub.add_parser("generate", help="generate the HTML report from allure-results")
    gen.add_argument("results_dir", type=Path)
    gen.add_argument("output_dir", type=Path)
    gen.add_argument("--name", default=DEFAULT_REPORT_NAME)
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            cli = install_allure()
            print(f"allure {cli.version} installed: {cli.cli_js}")
        elif args.command == "check":
            cli = find_allure_cli()
            print(f"allure {cli.version}: {cli.cli_js} (node {cli.node})")
        else:
            index = generate_html_report(args.results_dir, args.output_dir, report_name=args.name)
            print(index)
    except ConformanceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
