"""Every test's Allure result, serially and under xdist, labelled as a conformance report.

The fake suite runs in a subprocess with the report's standalone mode (`-n 2` with real
pytest-xdist workers); a second run plays an xdist worker with the real conformance plugin,
which is where results were lost (the plugin did not install the report on workers).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conformance.report.allure import CATEGORIES
from unit.report.typed_outcome_suite import CATALOG, EXPECTED, SUITE_OF, TESTS

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[3]


def category(result: dict[str, Any]) -> str | None:
    """The category Allure 3 gives a result (first match; JavaScript searches the message)."""
    message = (result.get("statusDetails") or {}).get("message") or ""
    for rule in CATEGORIES:
        if result["status"] in rule["matchedStatuses"]:
            regex = rule.get("messageRegex")
            if regex is None or re.search(regex, message):
                return rule["name"]
    return None


def labels(result: dict[str, Any], name: str) -> list[str]:
    return [x["value"] for x in result["labels"] if x["name"] == name]


def check_results(results_dir: Path) -> None:
    results = [json.loads(p.read_text()) for p in results_dir.glob("*-result.json")]
    assert sorted(r["name"] for r in results) == sorted(EXPECTED)  # one file per test
    for result in results:
        outcome, status, category_name = EXPECTED[result["name"]]
        assert labels(result, "dra_outcome") == [outcome], result["name"]
        skip_tags = {"not-applicable", "not-run"} & set(labels(result, "tag"))
        assert skip_tags == ({outcome} if status == "skipped" else set()), result["name"]
        assert result["status"] == status, result["name"]
        assert category(result) == category_name, result["name"]
        assert len(labels(result, "feature")) == 1  # the requirement ID
        if result["name"] in SUITE_OF:
            parent, suite = SUITE_OF[result["name"]]
            assert labels(result, "parentSuite") == [parent]
            assert labels(result, "suite") == [suite]
    by_name = {r["name"]: r for r in results}
    assert labels(by_name["test_registers"], "severity") == ["critical"]
    assert labels(by_name["test_prioritized_list"], "severity") == ["minor"]
    assert "MAY" in labels(by_name["test_prioritized_list"], "tag")
    not_run = by_name["test_withdrawn_device"]["statusDetails"]["message"]
    assert not_run == (
        "not run: the profile has no fault method for withdraw "
        "(to run it: give the profile a withdraw method)"
    )
    plain = by_name["test_allocation_mode_all"]["statusDetails"]["message"]
    assert plain == "not run: not applicable: a plain skip is never not applicable"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_every_result_reaches_allure(fake_suite, workers: list[str]) -> None:
    fake_suite.catalog.write_text(CATALOG)
    fake_suite.write_tests(TESTS)
    run = fake_suite.run(*workers)
    run.result.assert_outcomes(passed=1, failed=1, skipped=3, errors=1)
    if workers:
        assert "created: 2/2 workers" in run.result.stdout.str()
    check_results(run.run_dir / "allure-results")


# Plays an xdist worker: xdist gives a worker `workerinput` (the run dir and id from the
# controller) and its own command line, without the controller's `--alluredir`.
EMULATED_WORKER = """\
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.workerinput = {{
        "workerid": "gw0", "workercount": 1, "testrunuid": "t",
        "dra_run_id": "worker-run", "dra_run_dir": {run_dir!r},
    }}
    config.workeroutput = {{}}
"""


def test_the_conformance_plugin_writes_allure_results_on_a_worker(fake_suite, pytester) -> None:
    fake_suite.catalog.write_text(CATALOG)
    fake_suite.write_tests(TESTS)
    run_dir = pytester.path / "worker-run"
    pytester.makepyfile(emulated_worker=EMULATED_WORKER.format(run_dir=str(run_dir)))
    result = pytester.runpytest_subprocess(
        "-p",
        "emulated_worker",
        "-p",
        "no:cacheprovider",
        "--dra-profile",
        str(REPO / "drivers" / "fake" / "profile.yaml"),
        "--dra-html-report=never",
    )
    result.assert_outcomes(passed=1, failed=1, skipped=3, errors=1)
    check_results(run_dir / "allure-results")


LATE_SKIP = """\
import pytest
from conformance.model.outcome import not_applicable


class ApplicabilityFirst:
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        not_applicable("the cluster lacks feature gate DRAPrioritizedList")


def pytest_sessionstart(session):  # registered after the report: its setup hook runs first
    session.config.pluginmanager.register(ApplicabilityFirst())
"""


def test_a_skip_before_the_reports_setup_hook_keeps_the_labels(fake_suite, pytester) -> None:
    fake_suite.catalog.write_text(CATALOG)
    fake_suite.write_tests(TESTS.split("@pytest.mark.dra_requirement")[0] + LATE_TEST)
    pytester.makepyfile(late_skip=LATE_SKIP)
    run = fake_suite.run("-p", "late_skip")
    run.result.assert_outcomes(skipped=1)
    (result,) = run.allure_results()
    assert labels(result, "feature") == ["DRA-ALLOC-007"]
    assert labels(result, "parentSuite") == ["allocation"]
    assert labels(result, "dra_outcome") == ["not-applicable"]
    assert result["statusDetails"]["message"].startswith("not applicable: the cluster lacks")


LATE_TEST = """@pytest.mark.dra_requirement("DRA-ALLOC-007")
def test_prioritized_list():
    pass
"""
