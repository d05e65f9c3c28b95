"""The driver matrix from summaries the run's own code builds (`build_summary`): columns,
the union of the catalogs, outcomes with reasons, judgements from notes, and the renderings'
order and escaping."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from conformance.model.outcome import SkipKind
from conformance.report.catalog import RequirementInfo
from conformance.report.facts import RunFacts
from conformance.report.matrix import (
    ABSENT,
    SIGNED,
    UNSIGNED,
    build_matrix,
    column_from_summary,
    driver_version,
    title,
)
from conformance.report.matrix_html import render_html
from conformance.report.matrix_markdown import MARKER, column_label, render_markdown
from conformance.report.matrix_notes import Note
from conformance.report.outcomes import TestRecord
from conformance.report.summary import RunInfo, build_summary
from conformance.suite_root import SUITE_ROOT
from tests.unit.report.test_verdict import record

CORE = RequirementInfo("DRA-CORE-001", "core", "MUST", "The driver registers with the kubelet.")
REBOOT = RequirementInfo(
    "DRA-REBOOT-001", "node_restart", "MUST", "After a node restarts its pods run again."
)
ADMIN = RequirementInfo(
    "DRA-ALLOC-009",
    "allocation",
    "MAY",
    "Admin access <b>works</b>.",
    capabilities=("admin-access",),
)
NEWER = RequirementInfo("DRA-CORE-011", "core", "SHOULD", "Only in the newer catalog.")


def summary(
    driver: str,
    catalog: list[RequirementInfo],
    *,
    failing: tuple[str, ...] = (),
    started: float = 1_800_000_000.0,
    run_id: str = "run-1",
    capabilities: tuple[str, ...] = (),
    version: str = "v1.37.2",
    install: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A summary as the collector builds it, each requirement with one test."""
    records = [_record(i, info, failing, capabilities) for i, info in enumerate(catalog)]
    built = build_summary(
        run=RunInfo(id=run_id, started=started, finished=started + 60),
        facts=RunFacts(
            driver_name=driver,
            kubernetes_version=version,
            capabilities=capabilities,
            driver_install=install or {"method": "manifests", "image": f"{driver}/plugin:v1"},
        ),
        catalog={info.id: info for info in catalog},
        records=records,
    )
    built["provenance"] = {"suite_version": "0.1.0", "suite": {"commit": "a" * 40}}
    return built


def _record(
    index: int, info: RequirementInfo, failing: tuple[str, ...], capabilities: tuple[str, ...]
) -> TestRecord:
    """One test of the requirement, as the plugin types it: a capability the profile does not
    declare makes it not applicable, else it passes or fails."""
    nodeid = f"scenarios/t.py::test_{index}"
    lacking = [c for c in info.capabilities if c not in capabilities]
    if lacking:
        reason = f"the profile does not declare {lacking[0]}"
        return record(nodeid, info.id, skip={"reason": reason, "kind": SkipKind.NOT_APPLICABLE})
    if info.id in failing:
        return record(
            nodeid, info.id, call="failed", reason_call=f"{info.id} broke | badly\nsecond line"
        )
    return record(nodeid, info.id, call="passed")


def matrix_of(*summaries: dict[str, Any], notes=None, trust: str = SIGNED):
    columns = [column_from_summary(s, trust, "whole suite", notes) for s in summaries]
    return build_matrix(columns, summaries)


def test_columns_are_sorted_and_rows_are_the_union_of_the_catalogs() -> None:
    newer = summary("z.example.com", [CORE, NEWER], run_id="run-z")
    older = summary("a.example.com", [CORE, REBOOT], failing=("DRA-REBOOT-001",))
    matrix = matrix_of(newer, older)
    assert [c.driver for c in matrix.columns] == ["a.example.com", "z.example.com"]
    assert [r.id for r in matrix.rows] == ["DRA-CORE-001", "DRA-CORE-011", "DRA-REBOOT-001"]
    a, z = matrix.columns
    assert (a.cell("DRA-REBOOT-001").status, z.cell("DRA-REBOOT-001").status) == ("failed", ABSENT)
    assert a.cell("DRA-REBOOT-001").reason == (
        "scenarios/t.py::test_1: DRA-REBOOT-001 broke | badly second line"
    )
    assert (a.kubernetes, a.suite_commit, a.run_date) == (
        "v1.37.2",
        "a" * 12,
        "2027-01-15T08:00:00Z",
    )
    assert a.verdict == "NON-CONFORMANT" and z.verdict == "CONFORMANT"
    assert render_markdown(matrix) == render_markdown(matrix_of(older, newer))


def test_a_failure_is_judged_only_by_its_note() -> None:
    failed = summary("a.example.com", [CORE, REBOOT], failing=("DRA-REBOOT-001", "DRA-CORE-001"))
    note = Note("driver-bug", "CDI specs not re-created", "https://github.com/k/k/issues/1")
    notes = {"a.example.com": {"DRA-REBOOT-001": note, "DRA-ALLOC-009": note}}
    matrix = matrix_of(failed, notes=notes)
    column = matrix.columns[0]
    assert column.cell("DRA-REBOOT-001").note == note
    assert column.cell("DRA-CORE-001").note is None
    assert [(c.driver, r.id) for c, r in matrix.unjudged()] == [("a.example.com", "DRA-CORE-001")]
    text = render_markdown(matrix)
    assert (
        "| DRA-REBOOT-001 | MUST | After a node restarts its pods run again. | failed, driver "
        "bug [^" in text
    )
    assert (
        "| DRA-CORE-001 | MUST | The driver registers with the kubelet. | failed, not judged [^"
        in text
    )
    assert (
        "| DRA-REBOOT-001 | failed | scenarios/t.py::test_1: DRA-REBOOT-001 broke \\| badly second "
        "line | driver bug: CDI "
        "specs not re-created (https://github.com/k/k/issues/1) |" in text
    )
    assert (
        "| DRA-CORE-001 | failed | scenarios/t.py::test_0: DRA-CORE-001 broke \\| badly second "
        "line | **not judged** |" in text
    )


def test_a_passed_matrix_says_no_failure_and_notes_do_not_attach_to_passes() -> None:
    passed = summary("a.example.com", [CORE])
    notes = {"a.example.com": {"DRA-CORE-001": Note("suite-bug", "flaky")}}
    matrix = matrix_of(passed, notes=notes)
    assert matrix.columns[0].cell("DRA-CORE-001").note is None
    assert "No requirement failed or errored in these reports." in render_markdown(matrix)


def test_reasons_are_footnotes_numbered_once_per_text() -> None:
    one = summary("a.example.com", [CORE, REBOOT], failing=("DRA-REBOOT-001",))
    two = summary("b.example.com", [CORE, REBOOT], failing=("DRA-REBOOT-001",), run_id="r2")
    text = render_markdown(matrix_of(one, two))
    refs = re.findall(r"failed, not judged \[\^(\d+)\]", text)
    assert refs == ["1", "1"]
    assert (
        text.count("[^1]: scenarios/t.py::test_1: DRA-REBOOT-001 broke \\| badly second line") == 1
    )


def test_capabilities_declared_observed_and_not_probed() -> None:
    declared = summary("a.example.com", [CORE, ADMIN], capabilities=("admin-access",))
    undeclared = summary("b.example.com", [CORE, ADMIN], run_id="r2")
    matrix = matrix_of(declared, undeclared)
    assert matrix.capabilities == ("admin-access",)
    assert "| admin-access | declared, working | not declared, not probed |" in render_markdown(
        matrix
    )
    b = matrix.columns[1]
    assert b.cell("DRA-ALLOC-009").status == "not-applicable"
    assert b.cell("DRA-ALLOC-009").reason


def test_a_reason_shows_the_suite_s_files_relative_to_it() -> None:
    failed = summary("a.example.com", [CORE], failing=("DRA-CORE-001",))
    failed["requirements"][0]["reason"] = f"add it to {SUITE_ROOT / 'profile.yaml'}"
    column = matrix_of(failed).columns[0]
    assert column.cell("DRA-CORE-001").reason == "add it to profile.yaml"


def test_the_driver_version_is_what_the_report_records() -> None:
    assert driver_version({"install": {"goModule": "sigs.k8s.io/x@v0.4.0"}}) == (
        "sigs.k8s.io/x@v0.4.0"
    )
    images = [{"image": "localhost/d/plugin:abc", "digest": "sha256:" + "f" * 64}]
    assert driver_version({"install": {"image": "localhost/d/plugin:abc"}, "images": images}) == (
        "localhost/d/plugin:abc (sha256:ffffffffffff…)"
    )
    assert driver_version({"install": {"chart": "c", "version": "1.2"}}) == "chart c 1.2"
    assert driver_version({}) == "unknown (the report records no image)"


def test_a_long_statement_becomes_a_title_cut_at_a_word() -> None:
    long = "word " * 40
    assert title(long).endswith(" …") and len(title(long)) <= 92
    assert title("short one.") == "short one."


def test_column_labels_run_past_z() -> None:
    assert [column_label(i) for i in (0, 25, 26, 27)] == ["A", "Z", "AA", "AB"]


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.titles: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.titles += [v or "" for k, v in attrs if k == "title"]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_html_page_is_self_contained_and_escapes_what_reports_say() -> None:
    hostile = summary(
        'x.example.com"><script>alert(1)</script>',
        [CORE, ADMIN],
        failing=("DRA-CORE-001",),
        capabilities=("admin-access",),
    )
    page = render_html(matrix_of(hostile, trust=UNSIGNED))
    parsed = _Collect()
    parsed.feed(page)
    assert "script" not in parsed.tags and "link" not in parsed.tags
    assert not re.search(r"\b(src|href)=\"(https?:)?//", page.split("<body>")[0])
    assert 'x.example.com"><script>alert(1)</script>' in "".join(parsed.text)
    assert "Admin access <b>works</b>." in parsed.titles  # the statement, as hover text
    assert any(t.endswith("DRA-CORE-001 broke | badly second line") for t in parsed.titles)
    assert "not judged" in parsed.text and "unsigned" in parsed.text


def test_the_markdown_starts_with_the_generated_marker() -> None:
    one = summary("a.example.com", [CORE])
    column = column_from_summary(one, SIGNED, "whole suite")
    text = render_markdown(build_matrix([column], [one], notes_source="docs/n.yaml"))
    assert text.splitlines()[0] == MARKER
    assert "given with `--notes` (here `docs/n.yaml`):" in text
    assert "| **verdict** | | | **CONFORMANT** |" in text
