"""Only the suite decides: a test outside the suite's scenario tree that claims requirements
(with `record_property` or a `dra_requirement` marker) never makes a run CONFORMANT. The
plugin runs in-process on the suite's own catalog, rootdir and pyproject (as
`dra-conformance run` runs it), with the cluster stubbed (no cluster needed), serially and
under xdist."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from helpers.judged import judged

from conformance.model.requirements import load_catalog
from conformance.suite_root import SUITE_ROOT
from unit.plugin.test_plugin import PROFILE, stub_cluster

pytest_plugins = ["pytester"]

CATALOG = load_catalog(SUITE_ROOT / "scenarios/requirements.yaml").for_run(rehearsal=False)
MUST_IDS = [r.id for r in CATALOG.requirements if r.level == "MUST"]
# The repro: five lines, no scenario ran.
CLAIM_EVERY_MUST = f"""
def test_claims_every_must(record_property):
    for rid in {MUST_IDS!r}:
        record_property("requirement", rid)
"""
# A skip its own code calls not applicable stays not run.
SAYS_NOT_APPLICABLE = """
import pytest

def test_says_not_applicable(record_property):
    record_property("dra_outcome", "not-applicable")
    pytest.skip("not applicable: says so itself")
"""
MARKED = """
import pytest

@pytest.mark.dra_requirement("DRA-CORE-001")
def test_marked():
    pass
"""


@pytest.fixture
def foreign(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("DRA_REQUIREMENTS_FILE", raising=False)
    monkeypatch.delenv("DRA_KNOWN_ISSUES_FILE", raising=False)
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(pytester.path / "cache"))
    import yaml

    (pytester.path / "profile.yaml").write_text(yaml.safe_dump(PROFILE))
    stub_cluster(monkeypatch, {})
    return pytester


def run_foreign(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """`dra-conformance run ... DIR` in-process: the suite's rootdir and pytest config."""
    return pytester.runpytest_inprocess(
        "-p",
        "conformance.plugin",
        "-p",
        "no:cacheprovider",
        "-c",
        str(SUITE_ROOT / "pyproject.toml"),
        "--rootdir",
        str(SUITE_ROOT),
        "--dra-profile",
        str(pytester.path / "profile.yaml"),
        "--dra-cluster",
        "existing",
        "--dra-workload-image",
        "localhost/w:1",
        "--dra-run-id",
        "foreign-1",
        "--dra-report-dir",
        str(pytester.path / "run"),
        "--dra-html-report",
        "never",
        *args,
    )


def junit_cases(path: Path) -> dict[str, list[tuple[str, str]]]:
    return {
        str(case.get("name")): [
            (str(p.get("name")), str(p.get("value"))) for p in case.iter("property")
        ]
        for case in ET.parse(path).getroot().iter("testcase")
    }


@pytest.mark.parametrize("workers", [None, "2"])
def test_a_foreign_test_claiming_every_must_is_not_conformant(
    foreign: pytest.Pytester, workers: str | None
) -> None:
    claims = foreign.path / "claims"
    claims.mkdir()
    (claims / "test_claim.py").write_text(CLAIM_EVERY_MUST)
    (claims / "test_na.py").write_text(SAYS_NOT_APPLICABLE)
    xdist = ["-p", "xdist.plugin", "-n", workers] if workers else []
    result = run_foreign(foreign, *xdist, str(claims))
    out = result.stdout.str() + result.stderr.str()
    summary: dict[str, Any] = judged(json.loads((foreign.path / "run/summary.json").read_text()))
    assert summary["verdict"] == "INCOMPLETE", out
    assert summary["exit_code"] != 0
    must = [r for r in summary["requirements"] if r["level"] == "MUST"]
    assert len(must) == len(MUST_IDS) and {r["status"] for r in must} == {"not-run"}
    problems = sorted(summary["collection_problems"])
    assert problems[0].startswith(
        "test_claim.py::test_claims_every_must: only the suite's own tests under scenarios/ "
        "can decide a requirement (it recorded requirement=DRA-"
    ), problems
    assert problems[1] == (
        "test_na.py::test_says_not_applicable: only the suite's own tests under scenarios/ can "
        "decide a requirement (it recorded dra_outcome=not-applicable)"
    )
    assert any(p in summary["verdict_reasons"] for p in problems)
    tests = {t["nodeid"].rsplit("::", 1)[1]: t for t in summary["tests"]}
    assert tests["test_says_not_applicable"]["outcome"] == "not-run"
    assert tests["test_claims_every_must"]["requirements"] == []
    assert summary["modified"] is True
    assert any(
        "from outside the suite's scenario tree ran" in r for r in summary["modified_reasons"]
    )
    # JUnit carries the harness's word only: the claims are kept apart, deciding nothing
    cases = junit_cases(foreign.path / "run/junit.xml")
    names = {n for n, _ in cases["test_claims_every_must"]}
    assert names == {"dra_claim"}, cases["test_claims_every_must"]
    assert ("dra_outcome", "not-applicable") not in cases["test_says_not_applicable"]
    markdown = (foreign.path / "run/summary.md").read_text()
    assert markdown.splitlines()[0] == (
        "# DRA conformance: **MODIFIED SUITE — not a certification** (its tests alone: INCOMPLETE)"
    )


def test_a_foreign_test_with_the_suite_marker_is_a_collection_problem(
    foreign: pytest.Pytester,
) -> None:
    claims = foreign.path / "claims"
    claims.mkdir()
    (claims / "test_marked.py").write_text(MARKED)
    result = run_foreign(foreign, str(claims))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert (
        "test_marked.py::test_marked: only the suite's own tests under scenarios/ can decide "
        "a requirement"
    ) in result.stderr.str()
    summary = judged(json.loads((foreign.path / "run/summary.json").read_text()))
    assert summary["verdict"] != "CONFORMANT", summary["verdict_reasons"]
