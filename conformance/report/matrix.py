"""The driver matrix: several verified reports side by side (`dra-conformance matrix`).

A column is one report (a driver at a version, on a Kubernetes version, with a suite commit);
a row is a requirement of the union of the reports' catalogs. Everything here is read from
summary.json of reports that were verified first (conformance/report/matrix_intake.py), and
sorted, so the same reports always render to the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.report.matrix_notes import Note, Notes
from conformance.report.paths import portable
from conformance.report.requirement_status import RequirementStatus

OUTCOME_LABELS = {
    RequirementStatus.PASSED: "passed",
    RequirementStatus.FAILED: "failed",
    RequirementStatus.ERROR: "error",
    RequirementStatus.NOT_APPLICABLE: "not applicable",
    RequirementStatus.NOT_RUN: "not run",
    RequirementStatus.KNOWN_PLATFORM_ISSUE: "known platform issue",
}
ABSENT = "absent"  # the requirement is not in that report's catalog
ABSENT_REASON = "not in the catalog this report was made with"
# The suite judges neither outcome against the driver itself: a person has to (--notes).
NEEDS_JUDGEMENT = (RequirementStatus.FAILED, RequirementStatus.ERROR)
TITLE_CHARS = 90
SIGNED, UNSIGNED = "signed", "unsigned"


@dataclass(frozen=True)
class Cell:
    status: str  # a RequirementStatus value, or ABSENT
    reason: str = ""
    note: Note | None = None

    @property
    def label(self) -> str:
        return OUTCOME_LABELS.get(self.status, "—")  # type: ignore[call-overload]

    @property
    def needs_judgement(self) -> bool:
        return self.status in NEEDS_JUDGEMENT


@dataclass(frozen=True)
class Capability:
    declared: bool
    observed: str  # capabilities_seen: working | not working | not observed | not probed

    @property
    def text(self) -> str:
        return f"{'declared' if self.declared else 'not declared'}, {self.observed}"


@dataclass(frozen=True)
class Column:
    driver: str
    driver_version: str
    kubernetes: str
    suite_commit: str
    run_date: str
    run_id: str
    verdict: str
    trust: str  # SIGNED | UNSIGNED
    scope: str
    cells: Mapping[str, Cell] = field(default_factory=dict)
    capabilities: Mapping[str, Capability] = field(default_factory=dict)

    def cell(self, requirement: str) -> Cell:
        return self.cells.get(requirement) or Cell(ABSENT, ABSENT_REASON)

    @property
    def sort_key(self) -> tuple[str, ...]:
        return (self.driver, self.driver_version, self.kubernetes, self.run_date, self.run_id)


@dataclass(frozen=True)
class Row:
    id: str
    level: str
    title: str
    statement: str


@dataclass(frozen=True)
class Matrix:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    capabilities: tuple[str, ...]
    notes_source: str = ""  # the notes file, as the command line named it

    def unjudged(self) -> list[tuple[Column, Row]]:
        return [
            (c, r)
            for c in self.columns
            for r in self.rows
            if c.cell(r.id).needs_judgement and c.cell(r.id).note is None
        ]


def title(statement: str) -> str:
    """The statement's opening words: the catalog has no separate title."""
    text = " ".join(statement.split())
    if len(text) <= TITLE_CHARS:
        return text
    return text[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def driver_version(driver: Mapping[str, Any]) -> str:
    """What the report records of the driver's build: the Go module, else the installed image
    (with its content digest when the kubelet reported one), else the chart's version."""
    install = driver.get("install") or {}
    if install.get("goModule"):
        return str(install["goModule"])
    images = driver.get("images") or []
    ref = install.get("image") or (images[0].get("image") if images else "")
    if ref:
        digests = sorted({str(i.get("digest")) for i in images if i.get("digest")})
        ran = next((i for i in images if str(i.get("image", "")).endswith(str(ref))), None)
        digest = (ran or {}).get("digest") or (digests[0] if len(digests) == 1 else "")
        return f"{ref} ({digest[:19]}…)" if digest else str(ref)
    if install.get("version"):
        return f"chart {install.get('chart') or ''} {install['version']}".replace("  ", " ")
    return "unknown (the report records no image)"


def column_from_summary(
    summary: Mapping[str, Any], trust: str, scope: str, notes: Notes | None = None
) -> Column:
    driver = summary.get("driver") or {}
    name = str(driver.get("name") or "unknown driver")
    judged = (notes or {}).get(name, {})
    cells = {}
    for req in summary.get("requirements") or []:
        status = str(req.get("status") or "")
        note = judged.get(req["id"]) if status in NEEDS_JUDGEMENT else None
        # a reason may name a file of the machine that ran it: shown as the report shows paths
        reason = portable(" ".join(str(req.get("reason") or "").split()))
        cells[str(req["id"])] = Cell(status, reason, note)
    seen = summary.get("capabilities_seen") or {}
    prov = summary.get("provenance") or {}
    run = summary.get("run") or {}
    return Column(
        driver=name,
        driver_version=driver_version(driver),
        kubernetes=str((summary.get("cluster") or {}).get("kubernetes_version") or "unknown"),
        suite_commit=str((prov.get("suite") or {}).get("commit") or "")[:12]
        or f"{prov.get('suite_version') or 'unknown'} (no commit)",
        run_date=str(run.get("started") or ""),
        run_id=str(run.get("id") or ""),
        verdict=str(summary.get("verdict_text") or summary.get("verdict") or ""),
        trust=trust,
        scope=scope,
        cells=cells,
        capabilities={
            str(k): Capability(bool(v.get("declared")), str(v.get("observed") or ""))
            for k, v in sorted(seen.items())
        },
    )


def rows_from_summaries(summaries: Iterable[Mapping[str, Any]]) -> tuple[Row, ...]:
    """Every requirement of the union of the catalogs, by ID."""
    rows: dict[str, Row] = {}
    for summary in summaries:
        for req in summary.get("requirements") or []:
            statement = " ".join(str(req.get("statement") or "").split())
            rows.setdefault(
                str(req["id"]),
                Row(str(req["id"]), str(req.get("level") or ""), title(statement), statement),
            )
    return tuple(rows[k] for k in sorted(rows))


def build_matrix(
    columns: Sequence[Column], summaries: Iterable[Mapping[str, Any]], notes_source: str = ""
) -> Matrix:
    ordered = tuple(sorted(columns, key=lambda c: c.sort_key))
    capabilities = tuple(sorted({k for c in ordered for k in c.capabilities}))
    return Matrix(ordered, rows_from_summaries(summaries), capabilities, notes_source)
