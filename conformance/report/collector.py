"""`ReportCollector`: the pytest plugin object that gathers results and writes `reports/<run>/`.

The conformance plugin registers it from its pytest_configure (ideally tryfirst) with
`install_report_collector(config)`; `-p conformance.report.standalone` does the same without the
harness. Under pytest-xdist it is registered in every process: workers only label Allure results
and hand session-level figures back, the controller collects every test report (they reach it
through `pytest_runtest_logreport`) and writes the run directory at session finish:

    summary.json  summary.md  junit.xml  allure-results/  allure-report/  evidence.tar.gz
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conformance.model.outcome import typed_skip_properties
from conformance.observe.redact import redact_tree
from conformance.report import allure as allure_files
from conformance.report.allure_html import (
    ALLURE_REPORT,
    ReportGenerationError,
    ReportToolMissing,
    find_allure_cli,
    generate_html_report,
)
from conformance.report.catalog import catalog_for, known_issues_for
from conformance.report.cut_short import ReportsWhole, complete_report
from conformance.report.driver_figures import driver_figures
from conformance.report.evidence import DIAGNOSTICS, EVIDENCE, build_evidence
from conformance.report.facts import (
    WORKERINPUT_RUN_DIR,
    WORKERINPUT_RUN_FACTS,
    WORKERINPUT_RUN_ID,
    get_run_facts,
    get_run_id,
)
from conformance.report.junit import (
    JUNIT_XML,
    add_suite_properties,
    driver_operation_properties,
    ensure_junit_path,
    ensure_junit_writer,
    finalize_junit,
    junit_source,
    verdict_properties,
)
from conformance.report.markdown import SUMMARY_MD, must_counts, write_markdown
from conformance.report.metrics import (
    WORKEROUTPUT_INVENTORY,
    WORKEROUTPUT_METRICS,
    session_inventory,
    session_metrics,
)
from conformance.report.no_verdict import INTERNAL_ERROR as NO_VERDICT_INTERNAL
from conformance.report.no_verdict import NoVerdict, fence, no_verdict_of
from conformance.report.options import option, resolve_run_dir, verdict_scope
from conformance.report.outcomes import (
    PROP_CLAIM,
    RESERVED_PROPERTIES,
    TestRecord,
    report_reason,
    stamp_report,
    stamp_suite_facts,
)
from conformance.report.platform_issues import annotate_failure, issue_for_item
from conformance.report.provenance import junit_properties as junit_provenance
from conformance.report.provenance import modified_text, provenance_for, sha256_of
from conformance.report.run_figures import attach_run_figures, draw_charts
from conformance.report.summary import SUMMARY_JSON, RunInfo, build_summary, write_summary

PLUGIN_NAME = "dra-report-collector"


def install_report_collector(config: pytest.Config) -> ReportCollector:
    """Register the collector once per config (idempotent) and return it.

    Call it in every process, xdist workers included: workers label the Allure results, write
    them into the run directory and hand session-level figures to the controller.
    """
    for plugin in config.pluginmanager.get_plugins():
        if isinstance(plugin, ReportCollector):
            return plugin
    collector = ReportCollector(config)
    config.pluginmanager.register(collector, PLUGIN_NAME)
    config.pluginmanager.register(ReportsWhole(), f"{PLUGIN_NAME}-whole-reports")
    return collector


class ReportCollector:
    """Collects per-test results on the controller and writes the run directory."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.is_worker = hasattr(config, "workerinput")
        self.run_id = get_run_id(config)
        self.run_dir = resolve_run_dir(config)
        self.started = time.time()
        self.records: dict[str, TestRecord] = {}
        self.worker_metrics: list[dict[str, Any]] = []
        self.worker_inventory: dict[str, Any] = {}
        self.workers_seen: set[str] = set()
        self.summary: dict[str, Any] | None = None
        self.problems: list[str] = []  # report steps that did not work (shown at the end)
        self.html_failed = False
        self.collect_only = bool(getattr(config.option, "collectonly", False))
        self.html_mode = str(option(config, "dra_html_report", "auto"))
        self.charts = str(option(config, "dra_charts", "auto")) != "never"
        self.allure_results: Path | None = None
        self.scope = verdict_scope(config)
        if not self.is_worker and not self.collect_only:
            fence(self.run_dir, self.run_id)  # no earlier run's verdict survives this one
        if self.scope is not None and not self.is_worker:
            self._check_scope()
        if not self.collect_only:
            ensure_junit_path(config, self.run_dir)
            self.allure_results = allure_files.ensure_allure_results_dir(
                config, self.run_dir, clean=not self.is_worker
            )
            if self.html_mode == "always" and not self.is_worker:
                try:
                    find_allure_cli()
                except ReportToolMissing as exc:
                    raise pytest.UsageError(f"--dra-html-report=always: {exc}") from exc

    def _check_scope(self) -> None:
        catalog, error = catalog_for(self.config)
        known = sorted({r.suite for r in catalog.values()})
        unknown = [s for s in self.scope or () if s not in known and s not in catalog]
        if unknown and not error:
            raise pytest.UsageError(
                f"--dra-verdict-scope: unknown suite(s) or requirement(s) {', '.join(unknown)}; "
                f"the catalog has suites {', '.join(known)} and the IDs in "
                "scenarios/requirements.yaml"
            )

    # --- xdist (optional hooks: only called when pytest-xdist is active) ---------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKERINPUT_RUN_ID] = self.run_id
        node.workerinput[WORKERINPUT_RUN_DIR] = str(self.run_dir)
        facts = get_run_facts(self.config)
        if facts is not None:
            node.workerinput[WORKERINPUT_RUN_FACTS] = facts.to_dict()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node: Any) -> None:
        self.workers_seen.add(str(getattr(node.gateway, "id", node)))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        self.worker_metrics.extend(output.get(WORKEROUTPUT_METRICS, []))
        self.worker_inventory.update(output.get(WORKEROUTPUT_INVENTORY, {}))

    # --- every process -------------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started = time.time()
        if self.collect_only:
            return
        ensure_junit_writer(self.config)
        allure_files.ensure_allure_listener(self.config)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        stamp_suite_facts(item, report)
        exc = call.excinfo.value if call.excinfo else None
        typed = typed_skip_properties(exc)
        if typed:  # the report decides by these, never by the skip message
            stamp_report(report, **dict(typed))
            if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
                # pytest's own form, which JUnit and the terminal strip to the bare message
                report.longrepr = (*report.longrepr[:2], f"Skipped: {exc.msg}")
        elif report.when == "call" and report.failed:
            issue = issue_for_item(item)
            if issue is not None:  # a known upstream bug of this version: say so everywhere
                annotate_failure(item, report, issue)
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        issue = issue_for_item(item)
        if issue is not None and issue.disrupts:  # its body would break the tests beside it
            pytest.fail(f"not run on this Kubernetes version: {issue.disrupts}", pytrace=False)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        catalog, _ = catalog_for(self.config)
        allure_files.apply_dynamic_labels(item, catalog, get_run_facts(self.config))

    # --- controller (or single process) --------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)  # before JUnit writes the report's properties
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker:
            return
        record = self.records.get(report.nodeid)
        if record is None:
            record = self.records[report.nodeid] = TestRecord(nodeid=report.nodeid)
        record.add_report(report)
        # JUnit gets the harness's word only: a reserved name the test recorded is a claim
        kept = [p for p in report.user_properties if p[0] not in (*RESERVED_PROPERTIES, PROP_CLAIM)]
        report.user_properties = kept + record.junit_properties()

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if self.is_worker or report.passed:
            return
        record = self.records.setdefault(report.nodeid, TestRecord(nodeid=report.nodeid))
        record.phases["collect"] = report.outcome
        record.reasons["collect"] = report_reason(report)
        record.collect_error = report.failed

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.is_worker:
            output = self.config.workeroutput  # type: ignore[attr-defined]
            output[WORKEROUTPUT_METRICS] = session_metrics(self.config)
            output[WORKEROUTPUT_INVENTORY] = session_inventory(self.config)
            return
        if self.collect_only:
            return
        self.write_reports(int(exitstatus))
        if self.html_mode == "always" and self.html_failed:
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary is None:
            return
        summary = self.summary
        must = summary["counts"]["requirements"]["by_level"]["MUST"]
        title = summary.get("verdict_text") or summary["verdict"]
        terminalreporter.write_sep("=", f"DRA conformance: {title}")
        if summary.get("no_verdict_reason"):
            terminalreporter.write_line(f"no verdict: {summary['no_verdict_reason']}", red=True)
        if summary.get("no_verdict_detail"):  # the one line that says what to do
            error = f"dra-conformance: error: {summary['no_verdict_detail']}"
            terminalreporter.write_line(error, red=True)
        if summary.get("modified"):
            terminalreporter.write_line(modified_text(summary), red=True)
        if summary.get("setup_problem"):
            terminalreporter.write_line(f"no test ran: {summary['setup_problem']}", red=True)
        if summary.get("verdict_scope"):
            scope = ", ".join(summary["verdict_scope"])
            terminalreporter.write_line(f"verdict scope: {scope} only")
        if summary.get("verdict_basis") == "selected":
            terminalreporter.write_line("no MUST selected: judged on the selected requirements")
        partial = summary.get("partial")
        if partial and not summary.get("no_verdict_reason"):
            terminalreporter.write_line(
                f"partial: {partial['selected']} of {partial['total']} MUST selected; not "
                f"selected: {', '.join(partial['not_selected'])}"
            )
        terminalreporter.write_line(f"MUST requirements: {must_counts(must)}")
        reasons = summary.get("verdict_reasons", [])
        for reason in reasons[:10] if not summary.get("no_verdict_reason") else ():
            terminalreporter.write_line(f"  - {reason}")
        if len(reasons) > 10:
            terminalreporter.write_line(f"  ... and {len(reasons) - 10} more (see summary.md)")
        terminalreporter.write_line(f"report: {self.run_dir / SUMMARY_MD}")
        for problem in self.problems:
            terminalreporter.write_line(f"warning: {problem}", yellow=True)

    # --- writing -------------------------------------------------------------------------------

    def write_reports(self, exitstatus: int) -> dict[str, Any]:
        """Write summary.json, summary.md, Allure extras, the HTML report and the evidence."""
        run_dir = self.run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        junit_path = finalize_junit(self.config, run_dir)
        complete_report(self.config, run_dir, self.records.values(), self.allure_results)
        run = self._run_info(exitstatus)
        summary = self._summarize(run, junit_path)
        charts = draw_charts(
            run_dir, summary, skip=run.interrupted or not self.charts, problems=self.problems
        )
        # The verdict in JUnit too (the run directory's copy and the user's --junitxml file),
        # before redaction, which may leave the XML unparseable.
        for path in {junit_path, junit_source(self.config)}:
            if path is not None and path.is_file():
                add_suite_properties(
                    path, verdict_properties(summary) | driver_operation_properties(summary)
                )
        # No secret in any report: junit.xml, Allure results (and so the HTML report built from
        # them) and diagnostics are redacted in place, before anything is derived from them.
        for path in (junit_path, self.allure_results, run_dir / DIAGNOSTICS):
            if path is not None:
                redact_tree(path)
        if self.allure_results is not None:
            allure_files.write_environment(self.allure_results, summary)
            allure_files.write_categories(self.allure_results)
            attach_run_figures(self.allure_results, summary, charts, self.problems)
            if no_verdict_of(self.config) is None:  # a run that never started has nothing to show
                summary["artifacts"]["allure_report"] = self._html_report()
        summary_path = write_summary(run_dir, summary)
        self._add_junit_provenance(junit_path, summary, sha256_of(summary_path.read_bytes()))
        write_markdown(run_dir, summary)
        extra = {}
        if self.allure_results is not None and not self._inside_run_dir(self.allure_results):
            extra["allure-results"] = self.allure_results
        build_evidence(run_dir, extra_dirs=extra)
        self.summary = summary
        return summary

    def _run_info(self, exitstatus: int) -> RunInfo:
        return RunInfo(
            id=self.run_id,
            started=self.started,
            finished=time.time(),
            pytest_args=[str(a) for a in self.config.invocation_params.args],
            xdist_workers=len(self.workers_seen),
            exit_status=exitstatus,
            interrupted=exitstatus == pytest.ExitCode.INTERRUPTED,
            report_dir=str(self.run_dir),
        )

    def _summarize(self, run: RunInfo, junit_path: Path | None) -> dict[str, Any]:
        """The summary document, from the records and what the plugin learnt of the run."""
        catalog, catalog_error = catalog_for(self.config)
        no_verdict = no_verdict_of(self.config)
        if no_verdict is None and run.exit_status == pytest.ExitCode.INTERNAL_ERROR:
            no_verdict = NoVerdict(NO_VERDICT_INTERNAL)
        artifacts: dict[str, Any] = {
            "summary_json": SUMMARY_JSON,
            "summary_md": SUMMARY_MD,
            "junit_xml": JUNIT_XML if junit_path else None,
            "allure_results": self._relative(self.allure_results),
            "allure_report": None,
            "evidence": EVIDENCE,
        }
        known_issues, issues_error = known_issues_for(self.config)
        if issues_error:  # failures then stay failures: stricter, never a silent pass
            self.problems.append(f"known platform issues not applied: {issues_error}")
        facts = get_run_facts(self.config)
        operations, cluster_inventory = driver_figures(self.config)
        return build_summary(
            run=run,
            facts=facts,
            catalog=catalog,
            catalog_error=catalog_error,
            records=self.records.values(),
            session_metrics=session_metrics(self.config) + self.worker_metrics,
            inventory=session_inventory(self.config) | self.worker_inventory,
            artifacts=artifacts,
            verdict_scope=self.scope,
            known_issues=known_issues,
            no_verdict_reason=no_verdict.reason if no_verdict else "",
            no_verdict_detail=no_verdict.detail if no_verdict else "",
            provenance=provenance_for(self.config, self.records.values(), facts),
            driver_operations=operations,
            cluster_inventory=cluster_inventory,
        )

    def _add_junit_provenance(
        self, junit_path: Path | None, summary: dict[str, Any], digest: str
    ) -> None:
        """JUnit carries the provenance and summary.json's digest (`dra-conformance verify`)."""
        for path in {junit_path, junit_source(self.config)}:
            if path is None or not path.is_file():
                continue
            try:
                add_suite_properties(path, junit_provenance(summary, digest))
            except ET.ParseError as exc:
                self.problems.append(f"{path}: provenance not added: {exc}")

    def _html_report(self) -> str | None:
        if self.html_mode == "never" or self.allure_results is None:
            return None
        output = self.run_dir / ALLURE_REPORT
        try:
            index = generate_html_report(self.allure_results, output)
        except ReportToolMissing as exc:
            self.problems.append(f"Allure HTML report not generated: {exc}")
        except ReportGenerationError as exc:
            self.problems.append(f"Allure HTML report generation failed: {exc}")
        else:
            return self._relative(index)
        self.html_failed = True
        return None

    def _inside_run_dir(self, path: Path) -> bool:
        try:
            path.resolve().relative_to(self.run_dir.resolve())
        except ValueError:
            return False
        return True

    def _relative(self, path: Path | None) -> str | None:
        if path is None:
            return None
        if self._inside_run_dir(path):
            return str(path.resolve().relative_to(self.run_dir.resolve()))
        return str(path)
