"""The Allure HTML report: generated offline by Allure 3, and really showing the tests in a browser.

Slow (node + headless Chromium, ~10 s). It never skips: without node, the allure npm package or
chromium it fails and says what to install (the project's CI installs them):

    apt-get install -y nodejs npm chromium
    python -m conformance.report.allure_html install
"""

from __future__ import annotations

import html
import importlib.util
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

from conformance.report.allure import write_categories
from conformance.report.allure_html import (
    NPM_PREFIX_ENV,
    ReportToolMissing,
    find_allure_cli,
    generate_html_report,
    npm_prefix,
)
from unit.report.typed_outcome_suite import CATALOG, TESTS

pytest_plugins = ["pytester"]


def _load_allure_check() -> ModuleType:
    """tests/e2e/allure_check.py, the e2e tier's reader of the report, tested here offline."""
    path = Path(__file__).resolve().parents[2] / "e2e" / "allure_check.py"
    spec = importlib.util.spec_from_file_location("allure_check", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


allure_check = _load_allure_check()

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


def require_allure_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NPM_PREFIX_ENV, str(NPM_PREFIX))  # also for the runs in subprocesses
    try:
        find_allure_cli()
    except ReportToolMissing as exc:
        pytest.fail(f"cannot generate the Allure HTML report: {exc}", pytrace=False)


def rendered_test_titles(dom: str) -> set[str]:
    """Titles of the test leaves the report rendered (not the data embedded in scripts)."""
    visible = re.sub(r"<script\b[^>]*>[\s\S]*?</script>", "", dom)
    titles = re.findall(r'data-testid="tree-leaf-title"[^>]*>([^<]*)<', visible)
    return {html.unescape(t).strip() for t in titles}


def junit_test_count(junit_xml: Path) -> int:
    return len(ET.parse(junit_xml).getroot().findall(".//testcase"))


def test_html_report_of_a_run_shows_its_tests(fake_suite, monkeypatch) -> None:
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

    view = allure_check.read_allure_html(run.run_dir)
    assert view.total == len(FAKE_SUITE_TESTS) == junit_test_count(run.run_dir / "junit.xml")
    assert sum(view.by_status.values()) == view.total
    # The tree reads as a conformance report: catalog suite, then "<ID>: <statement>" (Allure
    # expands the groups holding a failure), not as the test files.
    assert {"core", "allocation", "device_loss"} <= set(view.sections)
    assert "DRA-ALLOC-005: allocationMode All allocates every matching device." in view.sections
    # only the test without a requirement falls back to its file
    assert [s for s in view.sections if "test_" in s or ".py" in s] == ["test_fake_suite"]


def test_html_report_of_an_xdist_run_tells_not_applicable_from_not_run(
    fake_suite, monkeypatch
) -> None:
    require_allure_cli(monkeypatch)
    fake_suite.catalog.write_text(CATALOG)
    fake_suite.write_tests(TESTS)
    run = fake_suite.run("-n", "2", html="always")
    assert "created: 2/2 workers" in run.result.stdout.str()
    assert allure_check.allure_html_test_count(run.run_dir) == 6
    assert junit_test_count(run.run_dir / "junit.xml") == 6
    assert allure_check.read_allure_categories(run.run_dir) == {
        "Not applicable": 1,
        "Not run": 2,
        "Product defects": 1,
        "Test defects": 1,
    }


def test_an_empty_report_shows_no_tests(pytester, tmp_path, monkeypatch) -> None:
    require_allure_cli(monkeypatch)
    results = tmp_path / "allure-results"
    write_categories(results)  # what the report held when no test result reached it
    generate_html_report(results, tmp_path / "allure-report")
    assert allure_check.allure_html_test_count(tmp_path) == 0


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
    titles = rendered_test_titles(allure_check.render_dom(index))
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
