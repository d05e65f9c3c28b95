"""The upgrade gate's comparison of two runs (pure): per requirement the outcome before and after,
classified, and whether the gate passes.

A platform team asks "does our driver still conform on the next Kubernetes version?": the gate
passes only when no MUST that passed before ends otherwise after (failed, error, not run or
known platform issue; a MUST that did not run, or failed with a known upstream bug of the new
version, is never counted as met). Not applicable after counts too: a MUST does not vanish
because the new version lacks its behaviour or dropped its gate, only because the profile no
longer declares a capability it needs. Fixes, newly applicable requirements (a
behaviour the new version brings) and the rest are reported, not judged; so are the driver
operations' latencies (conformance.report.gate_latency).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from conformance.model.requirements import only_missing_capabilities
from conformance.report.gate_latency import LatencyComparison, latency_json, latency_markdown
from conformance.report.verdict import NO_VERDICT, PASSING

PASSED = "passed"
NOT_APPLICABLE = "not-applicable"
# a known platform issue is not met either: a MUST that passed before and hits one after blocks
NOT_MET = ("failed", "error", "not-run", "known-platform-issue")


class Change(StrEnum):
    REGRESSION = "regression"  # passed before, not after (not applicable too, unless by profile)
    FIX = "fix"  # not met before, passed after
    NEWLY_APPLICABLE = "newly-applicable"  # not applicable before, applies after
    NO_LONGER_APPLICABLE = "no-longer-applicable"
    UNCHANGED = "unchanged"
    CHANGED = "changed"  # between two ways of not being met (failed -> not-run, ...)
    ONLY_BEFORE = "only-before"
    ONLY_AFTER = "only-after"


@dataclass(frozen=True)
class Side:
    """One run: where it ran and what each requirement in its verdict scope ended as."""

    label: str  # the Kubernetes version, or the baseline's file name
    run_id: str
    verdict: str
    statuses: Mapping[str, str]  # requirement id -> outcome
    levels: Mapping[str, str]  # requirement id -> MUST | SHOULD | MAY
    reasons: Mapping[str, str]


@dataclass(frozen=True)
class RequirementChange:
    id: str
    level: str
    before: str | None
    after: str | None
    change: Change
    reason_after: str = ""

    @property
    def blocks(self) -> bool:
        return self.change is Change.REGRESSION and self.level == "MUST"


@dataclass(frozen=True)
class Rehearsal:
    """The in-place upgrade rehearsal (`gate --rehearse`): the upgrade suite's run."""

    from_version: str
    to_version: str
    side: Side

    @property
    def passed(self) -> bool:
        return self.side.verdict in PASSING  # it runs the upgrade suite only: a partial pass

    @property
    def not_met(self) -> list[str]:
        return [i for i, status in self.side.statuses.items() if status != PASSED]


def rehearsal_of(summary: Mapping[str, Any], from_version: str, to_version: str) -> Rehearsal:
    return Rehearsal(from_version, to_version, side_of(summary, label="rehearsal"))


@dataclass(frozen=True)
class GateResult:
    before: Side
    after: Side
    changes: tuple[RequirementChange, ...]
    rehearsal: Rehearsal | None = None
    latency: LatencyComparison | None = None  # reported, never part of `passed`
    latency_chart: str | None = None  # its chart's file name, beside gate.md

    @property
    def blocking(self) -> tuple[RequirementChange, ...]:
        return tuple(c for c in self.changes if c.blocks)

    @property
    def passed(self) -> bool:
        return not self.blocking and (self.rehearsal is None or self.rehearsal.passed)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def of(self, change: Change) -> tuple[RequirementChange, ...]:
        return tuple(c for c in self.changes if c.change is change)


def _in_scope(requirement: Mapping[str, Any], scope: Iterable[str] | None) -> bool:
    if scope is None:
        return True
    scope = set(scope)
    return requirement.get("id") in scope or requirement.get("suite") in scope


def side_of(summary: Mapping[str, Any], label: str | None = None) -> Side:
    """A Side from a run's summary.json: only the requirements its verdict judged."""
    scope = summary.get("verdict_scope")
    judged = [r for r in summary.get("requirements") or () if _in_scope(r, scope)]
    version = (summary.get("cluster") or {}).get("kubernetes_version") or "unknown version"
    return Side(
        label=label or version,
        run_id=str((summary.get("run") or {}).get("id") or ""),
        verdict=str(summary.get("verdict") or ""),
        statuses={r["id"]: r["status"] for r in judged},
        levels={r["id"]: r.get("level", "") for r in judged},
        reasons={r["id"]: r.get("reason") or "" for r in judged},
    )


def classify(before: str | None, after: str | None, reason_after: str = "") -> Change:
    """`reason_after`: why the requirement ended as it did after. A requirement that passed and
    is not applicable after is a regression (the new version lacks the behaviour, or a gate
    vanished), unless the profile no longer declares a capability it needs."""
    if before is None:
        return Change.ONLY_AFTER
    if after is None:
        return Change.ONLY_BEFORE
    if before == after:
        return Change.UNCHANGED
    if before == PASSED:
        dropped = after == NOT_APPLICABLE and only_missing_capabilities(reason_after)
        return Change.NO_LONGER_APPLICABLE if dropped else Change.REGRESSION
    if before == NOT_APPLICABLE:
        return Change.NEWLY_APPLICABLE
    if after == PASSED:
        return Change.FIX
    if after == NOT_APPLICABLE:
        return Change.NO_LONGER_APPLICABLE
    return Change.CHANGED


def compare(before: Side, after: Side) -> GateResult:
    ids = list(before.statuses) + [i for i in after.statuses if i not in before.statuses]
    changes = tuple(
        RequirementChange(
            id=i,
            level=after.levels.get(i) or before.levels.get(i, ""),
            before=before.statuses.get(i),
            after=after.statuses.get(i),
            change=classify(
                before.statuses.get(i), after.statuses.get(i), after.reasons.get(i, "")
            ),
            reason_after=after.reasons.get(i, ""),
        )
        for i in ids
    )
    return GateResult(before, after, changes)


def to_json(result: GateResult) -> dict[str, Any]:
    def side(s: Side) -> dict[str, Any]:
        return {"label": s.label, "run_id": s.run_id, "verdict": s.verdict}

    return {
        "schema": "dra-conformance.io/gate/v1",
        "from": side(result.before),
        "to": side(result.after),
        "passed": result.passed,
        "exit_code": result.exit_code,
        "blocking": [c.id for c in result.blocking],
        "requirements": [asdict(c) | {"change": c.change.value} for c in result.changes],
        "rehearsal": _rehearsal_json(result.rehearsal),
        "driver_latency": None if result.latency is None else latency_json(result.latency),
        "latency_chart": result.latency_chart,
    }


def _rehearsal_json(rehearsal: Rehearsal | None) -> dict[str, Any] | None:
    if rehearsal is None:
        return None
    return {
        "from": rehearsal.from_version,
        "to": rehearsal.to_version,
        "run_id": rehearsal.side.run_id,
        "verdict": rehearsal.side.verdict,
        "passed": rehearsal.passed,
        "requirements": dict(rehearsal.side.statuses),
    }


def _rehearsal_markdown(rehearsal: Rehearsal) -> list[str]:
    side = rehearsal.side
    lines = [
        "",
        f"## In-place upgrade rehearsal {rehearsal.from_version} -> {rehearsal.to_version}: "
        f"{'PASS' if rehearsal.passed else 'FAIL'}",
        "",
        f"Run {side.run_id}, verdict {side.verdict}.",
        "",
        "| requirement | level | outcome | reason |",
        "|---|---|---|---|",
    ]
    for rid, status in side.statuses.items():
        reason = (side.reasons.get(rid) or "").replace("\n", " ").replace("|", "/")[:300]
        lines.append(f"| {rid} | {side.levels.get(rid, '')} | {status} | {reason} |")
    return lines


def to_markdown(result: GateResult) -> str:
    before, after = result.before.label, result.after.label
    verdict = "PASS" if result.passed else "FAIL"
    lines = [
        f"# Upgrade gate {before} -> {after}: {verdict}",
        "",
        f"- {before}: run {result.before.run_id}, verdict {result.before.verdict}",
        f"- {after}: run {result.after.run_id}, verdict {result.after.verdict}",
        "",
    ]
    if result.blocking:
        lines.append("MUST requirements that passed on " + before + " and do not on " + after + ":")
        lines += [f"- {c.id}: {c.after} — {c.reason_after}" for c in result.blocking]
    else:
        lines.append(f"No MUST requirement that passed on {before} fails or goes unrun on {after}.")
    lines += [
        "",
        "| requirement | level | " + before + " | " + after + " | change |",
        "|---|---|---|---|---|",
    ]
    for c in result.changes:
        if c.change is not Change.UNCHANGED:
            lines.append(
                f"| {c.id} | {c.level} | {c.before or '-'} | {c.after or '-'} | {c.change.value} |"
            )
    unchanged = len(result.of(Change.UNCHANGED))
    lines += ["", f"{unchanged} requirement(s) ended the same on both sides."]
    if result.rehearsal is not None:
        lines += _rehearsal_markdown(result.rehearsal)
    if result.latency is not None:
        lines += latency_markdown(result.latency, before, after)
    if result.latency_chart:
        lines += [f"![driver operation latency, {before} vs {after}]({result.latency_chart})"]
    return "\n".join(lines) + "\n"


def write(result: GateResult, directory: Path) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    md, js = directory / "gate.md", directory / "gate.json"
    md.write_text(to_markdown(result))
    js.write_text(json.dumps(to_json(result), indent=2) + "\n")
    return md, js


def load_summary(path: Path) -> dict[str, Any]:
    """A stored summary.json (a run's report directory is accepted too)."""
    if path.is_dir():
        path = path / "summary.json"
    document = json.loads(path.read_text())
    if not isinstance(document, dict) or "requirements" not in document:
        raise ValueError(f"{path} is not a dra-conformance summary.json (no requirements)")
    return document


def no_verdict(summary: Mapping[str, Any]) -> str | None:
    """Why a run's summary has no verdict to compare (None when it has one)."""
    if summary.get("verdict") != NO_VERDICT:
        return None
    reason = summary.get("no_verdict_reason") or "no reason given"
    detail = summary.get("no_verdict_detail")
    run_id = (summary.get("run") or {}).get("id")
    return f"run {run_id} has no verdict: {reason}" + (f" ({detail})" if detail else "")
