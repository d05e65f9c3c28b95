"""The Allure HTML report: generated offline by Allure 3, and really showing the tests in a browser.

Slow (node + headless Chromium, ~10 s). It never skips: without node, the allure npm package or
chromium it fails and says what to install (the project's CI installs them):

    apt-get install -y nodejs npm chromium
    python -m conformance.report.allure_html install
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.report.allure_html import (
    NPM_PREFIX_ENV,
    ReportToolMissing,
    find_allure_cli,
    generate_html_report,
    npm_prefix,
)

pytest_plugins = ["pytester"]

# Resolved at import: pytester points $HOME at its temporary directory.
NPM_PREFIX = npm_prefix()

FAKE_SUITE_TESTS = {
    "test_registers",
    "test_publishes_slices",
    "test_publishes_slices_again",
    "test_withdrawn_device",
    "test_allocation_mode_all",
    "test_prioritized_list",
    "test_unmarked_setup_error",
}


def chromium_binary() -> str:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return str(shutil.which(name))
    pytest.fail(
        "chromium is not installed; it is needed to check the Allure HTML report "
        "(Debian: apt-get install -y chromium, or set $CHROMIUM to a Chrome binary)",
        pytrace=False,
    )


def require_allure_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NPM_PREFIX_ENV, str(NPM_PREFIX))  # also for the runs in subprocesses
    try:
        find_allure_cli()
    except ReportToolMissing as exc:
        pytest.fail(f"cannot generate the Allure HTML report: {exc}", pytrace=False)


def render(index: Path, profile_dir: Path) -> str:
    """The DOM after the report's scripts ran, from headless Chromium, offline."""
    command = [
        chromium_binary(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile_dir}",
        "--virtual-time-budget=20000",
        "--dump-dom",
        index.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def rendered_test_titles(dom: str) -> set[str]:
    """Titles of the test leaves the report rendered (not the data embedded in scripts)."""
    visible = re.sub(r"<script\b[^>]*>[\s\S]*?</script>", "", dom)
    titles = re.findall(r'data-testid="tree-leaf-title"[^>]*>([^<]*)<', visible)
    return {html.unescape(t).strip() for t in titles}


def test_html_report_of_a_run_shows_its_tests(fake_suite, tmp_path, monkeypatch) -> None:
    require_allure_cli(monkeypatch)
    fake_suite.write_tests()
    run = fake_suite.run(html="always")
    assert run.result.ret == 1  # a test failed; the report step itself did not fail
    index = run.run_dir / "allure-report" / "index.html"
    assert run.summary["artifacts"]["allure_report"] == "allure-report/index.html"
    assert index.is_file()
    page = index.read_text()
    assert "googletagmanager" not in page  # viewing the report contacts nobody
    assert not (run.run_dir / "allure-report" / "data").exists()  # one self-contained file

    dom = render(index, tmp_path / "chromium-profile")
    assert rendered_test_titles(dom) == FAKE_SUITE_TESTS
    assert "DRA conformance" in dom


def test_generate_from_an_allure_results_dir(pytester, tmp_path, monkeypatch) -> None:
    require_allure_cli(monkeypatch)
    pytester.makepyfile(
        test_tiny="""
        import allure

        def test_claim_is_allocated():
            allure.dynamic.feature("DRA-CORE-003")

        def test_pod_sees_its_device():
            assert False, "container saw gpu-1, expected gpu-0"
        """
    )
    results = pytester.path / "allure-results"
    pytester.runpytest_subprocess(
        "-p", "no:dra_conformance", "-p", "no:cacheprovider", f"--alluredir={results}"
    ).assert_outcomes(passed=1, failed=1)

    index = generate_html_report(results, tmp_path / "report", report_name="tiny run")
    titles = rendered_test_titles(render(index, tmp_path / "chromium-profile"))
    assert titles == {"test_claim_is_allocated", "test_pod_sees_its_device"}


def test_missing_allure_package_is_named(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(NPM_PREFIX_ENV, str(tmp_path / "npm"))
    with pytest.raises(ReportToolMissing) as exc:
        find_allure_cli()
    message = str(exc.value)
    assert "npm package 'allure'" in message
    assert f"npm install --prefix {tmp_path / 'npm'} --save-exact" in message


def test_missing_node_is_named(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ReportToolMissing, match=r"node \(Node.js\) is not installed"):
        find_allure_cli()


def test_html_always_without_the_tool_stops_before_running(fake_suite, pytester, monkeypatch):
    monkeypatch.setenv(NPM_PREFIX_ENV, str(pytester.path / "no-npm"))
    fake_suite.write_tests()
    result = pytester.runpytest_subprocess(
        "-p",
        "no:dra_conformance",
        "-p",
        "conformance.report.standalone",
        "--dra-html-report=always",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--dra-html-report=always*npm package 'allure'*"])
