"""A driver that never becomes ready still gets a report: the plugin, run with pytester on a
tiny catalog with the cluster stubbed and wait_ready raising DriverNotReady, serially and under
xdist. The readiness requirements fail with the reason the cluster gave, the rest are not run,
no fixture is set up, and summary.json, summary.md, JUnit and Allure results are written."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.file_lease_book import use_file_lease_book
from helpers.judged import judged

from conformance.model.frozen import FrozenMap
from conformance.model.readiness_failure import ReadinessFailure
from unit.plugin.test_plugin import PROFILE, stub_cluster

pytest_plugins = ["pytester"]

REJECTION = (
    'ResourceSlice.resource.k8s.io "w1-gpu.example.com-devices-0" is invalid: '
    'spec.devices[1].name: Duplicate value: "gpu-0"'
)
CATALOG = {
    "schema": 1,
    "requirements": [
        {"id": "DRA-CORE-001", "suite": "core", "level": "MUST", "statement": "Registers."},
        {"id": "DRA-CORE-002", "suite": "core", "level": "MUST", "statement": "Publishes."},
        {"id": "DRA-CORE-003", "suite": "core", "level": "MUST", "statement": "Allocates."},
        {
            "id": "DRA-ALLOC-001",
            "suite": "allocation",
            "level": "MUST",
            "statement": "Sel.",
            "gates": {"capabilities": ["prioritized-list"]},
        },
    ],
}
CATALOG["requirements"][0]["readiness"] = "plugin"
CATALOG["requirements"][1]["readiness"] = "slices"

# Every test would leave a mark and fail if it (or any fixture of it) ran.
CONFTEST = """
import pytest

@pytest.fixture(autouse=True)
def ran(request, tmp_path_factory):
    (tmp_path_factory.getbasetemp().parent / "RAN").write_text(request.node.nodeid)
"""
CORE = """
@pytest.mark.dra_requirement("DRA-CORE-001")
def test_registers(dra_context, test_namespace):
    raise AssertionError("ran")

@pytest.mark.dra_requirement("DRA-CORE-002")
@pytest.mark.dra_devices("big")
def test_publishes(dra_context, device_lease):
    raise AssertionError("ran")

@pytest.mark.dra_requirement("DRA-CORE-003")
def test_allocates(dra_context, test_namespace):
    raise AssertionError("ran")
"""
ALLOC = """
@pytest.mark.dra_requirement("DRA-ALLOC-001")
def test_selector(test_namespace):
    raise AssertionError("ran")
"""


def failure(parts: tuple[str, ...]) -> ReadinessFailure:
    problems = {
        "plugin": "kubelet-plugin DaemonSet: 0/1 ready, 1/1 updated",
        "slices": "no ResourceSlices (or too few) on w1",
    }
    return ReadinessFailure(
        problems=FrozenMap({p: problems[p] for p in parts}),
        cluster_said=(REJECTION,),
        waited_s=45.0,
        last_seen="daemonset: ready; slices per node: none; nodes without enough slices: w1",
        driver=PROFILE["driver"],
    )


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # The installed plugins, as in a real run: the harness, xdist and allure-pytest.
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("DRA_REQUIREMENTS_FILE", raising=False)
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(pytester.path / "cache"))
    scenarios = pytester.path / "scenarios"
    for folder, body in (("core", CORE), ("allocation", ALLOC)):
        (scenarios / folder).mkdir(parents=True)
        (scenarios / folder / f"test_{folder}.py").write_text(
            "import pytest\n\n" + textwrap.dedent(body)
        )
    (scenarios / "requirements.yaml").write_text(yaml.safe_dump(CATALOG))
    (scenarios / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (pytester.path / "profile.yaml").write_text(yaml.safe_dump(PROFILE))
    use_file_lease_book(pytester.path)  # no cluster: the book's double
    return pytester


def never_ready(monkeypatch: pytest.MonkeyPatch, parts: tuple[str, ...]) -> None:
    from conformance.install import installer

    stub_cluster(monkeypatch, {})

    def wait_ready(*args: Any, timeout: float | None = None, **kwargs: Any) -> None:
        raise installer.DriverNotReady(failure(parts), timeout or 45.0)

    monkeypatch.setattr(installer, "wait_ready", wait_ready)


def run(suite: pytest.Pytester, workers: str | None) -> pytest.RunResult:
    args = [
        "-p",
        "no:cacheprovider",
        "--dra-profile",
        "profile.yaml",
        "--dra-cluster",
        "existing",
        "--dra-run-id",
        "run-1",
        "--dra-report-dir",
        str(suite.path / "run"),
        "--dra-html-report",
        "never",
        "-rA",
        "scenarios",
    ]
    if workers:
        args = ["-n", workers, *args]
    return suite.runpytest_inprocess(*args)


def junit_cases(path: Path) -> dict[str, dict[str, Any]]:
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        cases[case.get("name")] = {
            "outcome": outcome.tag if outcome is not None else "passed",
            "message": outcome.get("message") if outcome is not None else "",
            "dra_outcome": props.get("dra_outcome"),
        }
    return cases


@pytest.mark.parametrize("workers", [None, "2"])
def test_slices_rejected_fails_core_002_and_runs_nothing(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: str | None
) -> None:
    never_ready(monkeypatch, ("slices",))
    result = run(suite, workers)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    result.assert_outcomes(failed=1, skipped=3)
    assert not (suite.path.parent / "RAN").exists() and "ran" not in out.split("short test")[-1]

    run_dir = suite.path / "run"
    summary = judged(json.loads((run_dir / "summary.json").read_text()))
    assert summary["verdict"] == "NON-CONFORMANT" and summary["exit_code"] == 1
    assert summary["setup_problem"].startswith(
        "the driver never became ready: driver gpu.example.com never became ready after 45s "
        "(no ResourceSlices (or too few) on w1); the cluster said: ResourceSlice."
    )
    status = {r["id"]: r for r in summary["requirements"]}
    assert status["DRA-CORE-002"]["status"] == "failed"
    assert REJECTION in status["DRA-CORE-002"]["reason"]
    assert "the driver never became ready (no ResourceSlices" in status["DRA-CORE-002"]["reason"]
    for rid in ("DRA-CORE-001", "DRA-CORE-003"):
        assert status[rid]["status"] == "not-run", status[rid]
        assert "the driver never became ready: driver gpu.example.com" in status[rid]["reason"]
        assert status[rid]["reason"].endswith(
            "the driver never became ready: driver gpu.example.com never became ready after "
            "45s (no ResourceSlices (or too few) on w1)"
        )
        assert status[rid]["remedy"] == f"fix the driver's readiness first: {REJECTION}"
    # What the driver lacks still decides first.
    assert status["DRA-ALLOC-001"]["status"] == "not-applicable"

    cases = junit_cases(run_dir / "junit.xml")
    assert {n: c["outcome"] for n, c in cases.items()} == {
        "test_registers": "skipped",
        "test_publishes": "failure",
        "test_allocates": "skipped",
        "test_selector": "skipped",
    }
    assert REJECTION in cases["test_publishes"]["message"]
    assert cases["test_registers"]["dra_outcome"] == "not-run"
    assert cases["test_selector"]["dra_outcome"] == "not-applicable"

    markdown = (run_dir / "summary.md").read_text()
    assert markdown.splitlines()[2].startswith("**No test ran: the driver never became ready:")
    allure = [json.loads(p.read_text()) for p in (run_dir / "allure-results").glob("*-result.json")]
    outcomes = [
        (
            r["name"],
            r["status"],
            next(lb["value"] for lb in r["labels"] if lb["name"] == "dra_outcome"),
        )
        for r in allure
    ]
    assert sorted(outcomes) == [
        ("test_allocates", "skipped", "not-run"),
        ("test_publishes", "failed", "failed"),
        ("test_registers", "skipped", "not-run"),
        ("test_selector", "skipped", "not-applicable"),
    ]
    result.stdout.fnmatch_lines(["*NO TEST RUNS: the driver never became ready*"])


def test_pods_never_ready_fail_core_001_too(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    never_ready(monkeypatch, ("plugin", "slices"))
    result = run(suite, None)
    result.assert_outcomes(failed=2, skipped=2)
    summary = judged(json.loads((suite.path / "run" / "summary.json").read_text()))
    status = {r["id"]: r for r in summary["requirements"]}
    assert status["DRA-CORE-001"]["status"] == "failed"
    assert "kubelet-plugin DaemonSet: 0/1 ready" in status["DRA-CORE-001"]["reason"]
    assert status["DRA-CORE-003"]["status"] == "not-run"


def test_not_ready_and_unreadable_stops_the_run_with_the_readiness_reason(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conformance.plugin import session

    never_ready(monkeypatch, ("slices",))

    def unreadable(*args: Any) -> None:
        raise ConnectionError("connection refused")

    monkeypatch.setattr(session, "read_cluster_facts", unreadable)
    result = run(suite, None)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    out = result.stdout.str() + result.stderr.str()
    assert "dra-conformance: error: driver gpu.example.com not ready" in out
    summary = judged(json.loads((suite.path / "run" / "summary.json").read_text()))
    assert (summary["verdict"], summary["no_verdict_reason"]) == (
        "NO-VERDICT",
        "the run could not be set up",
    )
