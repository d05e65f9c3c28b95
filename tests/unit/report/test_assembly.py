"""Report assembly end to end: a fake suite run with the collector, serially and with xdist."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from conformance.report.junit import parse_junit_counts
from conformance.report.summary import SCHEMA

MODIFIED = "MODIFIED SUITE — not a certification"

pytest_plugins = ["pytester"]

EXPECTED_TESTS = {
    "total": 7,
    "passed": 3,
    "failed": 1,
    "error": 1,
    "not_applicable": 1,
    "not_run": 1,
}
EXPECTED_STATUS = {
    "DRA-CORE-001": "passed",
    "DRA-CORE-002": "passed",
    "DRA-LOSS-003": "not-applicable",
    "DRA-ALLOC-005": "failed",
    "DRA-ALLOC-007": "not-run",
}


def assert_counts_equal_junit(run) -> None:
    tests = run.summary["counts"]["tests"]
    junit = parse_junit_counts(run.run_dir / "junit.xml")
    assert junit.tests == tests["total"]
    assert junit.failures == tests["failed"]
    assert junit.errors == tests["error"]
    assert junit.skipped == tests["not_run"] + tests["not_applicable"]


def test_summary_of_a_serial_run(fake_suite) -> None:
    fake_suite.write_tests()
    run = fake_suite.run()
    summary = run.summary

    assert summary["schema"] == SCHEMA
    assert summary["counts"]["tests"] == EXPECTED_TESTS
    assert_counts_equal_junit(run)
    assert {r["id"]: r["status"] for r in summary["requirements"]} == EXPECTED_STATUS
    # a failed SHOULD and a MAY that did not run do not matter; a not-applicable MUST is fine
    assert summary["verdict"] == "CONFORMANT", summary["verdict_reasons"]
    assert summary["verdict_reasons"] == []

    slices = run.requirement("DRA-CORE-002")
    assert slices["level"] == "MUST" and slices["suite"] == "core"
    assert slices["statement"] == "The driver publishes ResourceSlices."
    assert slices["tests"] == [
        "test_fake_suite.py::test_publishes_slices",
        "test_fake_suite.py::test_publishes_slices_again",
    ]
    assert slices["duration_s"] >= 0
    assert summary["driver"]["fault_kinds"] == ["taint", "withdraw"]
    assert "- fault kinds: taint, withdraw" in (run.run_dir / "summary.md").read_text()
    na = run.requirement("DRA-LOSS-003")
    assert na["reason"] == "the driver profile does not declare capability withdraw-device"
    failed = run.requirement("DRA-ALLOC-005")
    assert "test_allocation_mode_all" in failed["reason"]
    assert "expected every matching device" in failed["reason"]
    assert "needs two nodes" in run.requirement("DRA-ALLOC-007")["reason"]

    assert summary["run"]["xdist_workers"] == 0
    assert summary["run"]["exit_status"] == 1  # pytest's own status: a test failed
    assert summary["driver"]["name"] == "gpu.example.com"
    assert summary["driver"]["profile_digest"].startswith("sha256:")
    assert summary["cluster"]["kubernetes_version"] == "v1.37.2"
    assert summary["cluster"]["nodes"] == [{"name": "worker-1"}, {"name": "worker-2"}]
    assert summary["cluster"]["served_dra_apis"] == ["resource.k8s.io/v1"]
    assert summary["cluster"]["build_notes"] == []
    assert summary["inventory"] == {"devices": {"worker-1": ["gpu-0", "gpu-1"]}}

    metrics = summary["performance"]["metrics"]
    assert metrics["claim_allocated"]["count"] == 3
    assert metrics["claim_allocated"]["p50"] == pytest.approx(1.0)
    assert metrics["claim_allocated"]["p95"] == pytest.approx(1.45)
    assert metrics["driver_start_to_first_slice"]["count"] == 1

    for name in ("summary.json", "summary.md", "junit.xml", "evidence.tar.gz"):
        assert (run.run_dir / name).is_file(), name
    markdown = (run.run_dir / "summary.md").read_text()
    # a report written without the harness is never the suite: modified, whatever it judged
    assert markdown.startswith(f"# DRA conformance: **{MODIFIED}** (its tests alone: CONFORMANT)")
    assert "| DRA-ALLOC-005 | SHOULD | allocation | FAIL |" in markdown
    assert "- **DRA-LOSS-003** (MUST): the driver profile does not declare" in markdown
    assert "| claim_allocated | 3 | 1.000 s | 1.450 s |" in markdown
    run.result.stdout.fnmatch_lines([f"*DRA conformance: {MODIFIED}*"])


def test_xdist_run_gives_the_same_report(fake_suite) -> None:
    fake_suite.write_tests()
    serial = fake_suite.run(run_name="serial").summary
    run = fake_suite.run("-n", "2", run_name="parallel")
    summary = run.summary

    assert summary["run"]["xdist_workers"] == 2
    assert summary["counts"] == serial["counts"]
    assert_counts_equal_junit(run)
    assert {r["id"]: r["status"] for r in summary["requirements"]} == EXPECTED_STATUS
    assert summary["verdict"] == serial["verdict"] == "CONFORMANT"
    assert {t["worker"] for t in summary["tests"]} <= {"gw0", "gw1"}
    # figures from test reports and from a worker's config both reach the controller
    metrics = summary["performance"]["metrics"]
    assert metrics["claim_allocated"]["count"] == 3
    assert metrics["driver_start_to_first_slice"]["count"] == 1
    assert summary["inventory"] == {"devices": {"worker-1": ["gpu-0", "gpu-1"]}}
    # every worker wrote its Allure results into the one run directory
    assert len(run.allure_results()) == EXPECTED_TESTS["total"]


def test_failed_must_is_non_conformant(fake_suite) -> None:
    fake_suite.write_tests(
        """
        import pytest

        @pytest.mark.dra_requirement("DRA-CORE-001")
        def test_registers():
            assert False, "no registration for gpu.example.com on worker-2"

        @pytest.mark.dra_requirement("DRA-CORE-002")
        def test_slices():
            pass

        @pytest.mark.dra_requirement("DRA-LOSS-003")
        def test_withdraw():
            pass
        """
    )
    summary = fake_suite.run().summary
    assert summary["verdict"] == "NON-CONFORMANT"
    assert len(summary["verdict_reasons"]) == 1
    assert summary["verdict_reasons"][0].startswith("DRA-CORE-001 (MUST) failed:")
    assert "no registration for gpu.example.com" in summary["verdict_reasons"][0]


def test_failed_should_is_still_conformant(fake_suite) -> None:
    fake_suite.write_tests(
        """
        import pytest

        @pytest.mark.dra_requirement("DRA-CORE-001")
        def test_registers():
            pass

        @pytest.mark.dra_requirement("DRA-CORE-002")
        def test_slices():
            pass

        @pytest.mark.dra_requirement("DRA-LOSS-003")
        def test_withdraw():
            pass

        @pytest.mark.dra_requirement("DRA-ALLOC-005")
        def test_all_mode():
            assert False
        """
    )
    summary = fake_suite.run().summary
    assert summary["counts"]["requirements"]["by_level"]["SHOULD"]["failed"] == 1
    assert summary["verdict"] == "CONFORMANT"


def test_missing_must_is_incomplete(fake_suite) -> None:
    fake_suite.add_requirement("DRA-CORE-003", "MUST")
    fake_suite.write_tests()
    summary = fake_suite.run().summary
    missing = next(r for r in summary["requirements"] if r["id"] == "DRA-CORE-003")
    assert missing["status"] == "not-run"
    assert missing["tests"] == []
    assert missing["reason"].startswith("no test of it ran")
    assert summary["verdict"] == "INCOMPLETE"
    assert summary["exit_code"] == 3
    assert [r.split(":")[0] for r in summary["verdict_reasons"]] == ["DRA-CORE-003 (MUST) not run"]


def test_must_not_run_is_incomplete_and_erroring_is_non_conformant(fake_suite) -> None:
    fake_suite.write_tests(
        """
        import pytest
        from conformance.model.outcome import not_run

        @pytest.mark.dra_requirement("DRA-CORE-001")
        def test_registers():
            pytest.skip("kubelet log not readable")

        @pytest.mark.dra_requirement("DRA-CORE-002")
        def test_slices(broken_fixture):
            pass

        @pytest.mark.dra_requirement("DRA-LOSS-003")
        def test_withdraw():
            # a bare skip whose text claims non-applicability is still "not run"
            pytest.skip("not applicable: no withdraw-device capability")

        @pytest.mark.dra_requirement("DRA-ALLOC-005")
        def test_all_mode():
            not_run("disruptive", "pass --allow-disruptive")
        """
    )
    run = fake_suite.run()
    summary = run.summary
    assert run.requirement("DRA-CORE-001")["status"] == "not-run"
    assert run.requirement("DRA-CORE-002")["status"] == "error"
    assert (
        "setup error: RuntimeError: cannot reach the cluster"
        in run.requirement("DRA-CORE-002")["reason"]
    )
    assert run.requirement("DRA-LOSS-003")["status"] == "not-run"
    should = run.requirement("DRA-ALLOC-005")
    assert (should["status"], should["remedy"]) == ("not-run", "pass --allow-disruptive")
    assert should["reason"].endswith("::test_all_mode: disruptive")
    assert summary["verdict"] == "NON-CONFORMANT"
    blocking = sorted(r.split(" ")[0] for r in summary["verdict_reasons"])
    assert blocking == ["DRA-CORE-001", "DRA-CORE-002", "DRA-LOSS-003"]
    markdown = (run.run_dir / "summary.md").read_text()
    assert "## Not run" in markdown
    assert "**DRA-ALLOC-005** (SHOULD): " in markdown
    assert "To run it: pass --allow-disruptive." in markdown
    junit = (run.run_dir / "junit.xml").read_text()
    assert '<property name="dra_outcome" value="not-run" />' in junit


def test_user_junitxml_is_copied_into_the_run_dir(fake_suite, pytester) -> None:
    fake_suite.write_tests()
    elsewhere = pytester.path / "elsewhere.xml"
    run = fake_suite.run(f"--junitxml={elsewhere}")
    assert elsewhere.is_file()
    assert (run.run_dir / "junit.xml").read_bytes() == elsewhere.read_bytes()
    assert_counts_equal_junit(run)


def test_verdict_scope(fake_suite, pytester) -> None:
    fake_suite.add_requirement("DRA-EXT-001", "MUST", suite="extended_resource")
    fake_suite.write_tests()
    whole = fake_suite.run(run_name="whole").summary
    assert whole["verdict"] == "INCOMPLETE"
    assert whole["verdict_scope"] is None

    run = fake_suite.run("--dra-verdict-scope=core,device_loss", run_name="scoped")
    summary = run.summary
    # it passed what it selected, which is not every MUST: never the word a certification gets
    assert summary["verdict"] == "PASSED-PARTIAL", summary["verdict_reasons"]
    assert summary["exit_code"] == 0
    assert summary["partial"] == {"selected": 3, "total": 4, "not_selected": ["DRA-EXT-001"]}
    title = "PASSED (partial: 3 of 4 MUST selected) — not a certification"
    assert summary["verdict_text"] == title
    assert summary["verdict_scope"] == ["core", "device_loss"]
    shown = f"# DRA conformance: **{MODIFIED}** (its tests alone: PASSED-PARTIAL)"
    assert shown in (run.run_dir / "summary.md").read_text()
    assert "Not selected: DRA-EXT-001." in (run.run_dir / "summary.md").read_text()
    junit = ET.parse(run.run_dir / "junit.xml").getroot()
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert props["dra_verdict"] == "MODIFIED" and props["dra_exit_code"] == "4"
    assert props["dra_partial"] == "3 of 4 MUST selected"
    assert props["dra_not_selected"] == "DRA-EXT-001"
    assert props["dra_run_id"] == summary["run"]["id"]
    environment = (run.run_dir / "allure-results" / "environment.properties").read_text()
    assert "Verdict=MODIFIED" in environment
    assert "Verdict.partial.not_selected=DRA-EXT-001" in environment
    assert_counts_equal_junit(run)
    # counts are of what the verdict judged: the out-of-scope MUST is not "not run" there
    must = summary["counts"]["requirements"]["by_level"]["MUST"]
    assert (must["total"], must["not_run"]) == (3, 0)
    assert run.requirement("DRA-EXT-001")["status"] == "not-run"
    markdown = (run.run_dir / "summary.md").read_text()
    assert "Verdict scope: core, device_loss only" in markdown

    # Requirement IDs scope the verdict too: one requirement judged alone.
    one = fake_suite.run("--dra-verdict-scope=DRA-CORE-001", run_name="one").summary
    assert one["verdict"] == "PASSED-PARTIAL", one["verdict_reasons"]
    assert one["partial"]["selected"] == 1
    assert one["verdict_scope"] == ["DRA-CORE-001"]
    missing = fake_suite.run("--dra-verdict-scope=DRA-EXT-001", run_name="missing").summary
    assert missing["verdict"] == "INCOMPLETE"
    # A selection with no MUST in it is judged on what it selected: the SHOULD failed.
    should = fake_suite.run("--dra-verdict-scope=DRA-ALLOC-005", run_name="should").summary
    assert (should["verdict"], should["verdict_basis"]) == ("NON-CONFORMANT", "selected")

    bad = pytester.runpytest_subprocess(
        "-p",
        "no:dra_conformance",
        "-p",
        "conformance.report.standalone",
        "--dra-verdict-scope=cores",
    )
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*unknown suite(s) or requirement(s) cores*"])


LATE_PLUGIN = """
import xml.etree.ElementTree as ET

import pytest
from conformance.report.collector import install_report_collector
from conformance.report.options import add_report_options


def pytest_addoption(parser):
    add_report_options(parser)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):  # after junitxml and allure-pytest have configured
    install_report_collector(config)
    install_report_collector(config)  # idempotent
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_collector_registered_late_still_gets_junit_and_allure(fake_suite, pytester, workers):
    pytester.makepyfile(late_plugin=LATE_PLUGIN)
    fake_suite.write_tests()
    run = fake_suite.run(*workers, plugin="late_plugin")
    assert run.summary["counts"]["tests"] == EXPECTED_TESTS
    assert_counts_equal_junit(run)
    results = run.allure_results()
    assert len(results) == EXPECTED_TESTS["total"]
    features = {x["value"] for r in results for x in r["labels"] if x["name"] == "feature"}
    assert features == set(EXPECTED_STATUS)
