"""The top of summary.md, what a reader needs first: why the verdict is what it is, what failed
(one line each) and the first thing to do about it (a remedy or where its evidence is)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FAILED = ("failed", "error")
JUDGED_LEVELS = ("MUST", "SHOULD")
REASON_CHARS = 300  # one line; the requirements table below has it whole
WHY = {
    "NON-CONFORMANT": "Why it is not conformant:",
    "INCOMPLETE": "Why it is incomplete (what did not run and what would make it run, or "
    "what failed with a known platform issue):",
    "PASSED-PARTIAL": "Why it is not a certification:",
    "NO-VERDICT": "Why there is no verdict:",
    "MODIFIED": "Why it is not a certification (the suite that ran is not the suite):",
}


def cell(value: Any) -> str:
    text = " ".join(str(value if value is not None else "").split())
    return text.replace("|", "\\|")


def _short(value: Any) -> str:
    text = cell(value)
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def reasons_lines(summary: Mapping[str, Any]) -> list[str]:
    """The verdict's reasons, right under it (a run without a verdict says why at the top)."""
    reasons = summary.get("verdict_reasons") or []
    if not reasons or summary.get("no_verdict_reason"):
        return []
    out = [WHY.get(summary.get("verdict", "INCOMPLETE"), "Why:"), ""]
    return [*out, *(f"- {cell(r)}" for r in reasons), ""]


def decides(req: Mapping[str, Any]) -> bool:
    """A MUST, or a SHOULD or MAY the profile promised by declaring its capabilities."""
    return req.get("level") == "MUST" or bool(req.get("promised_by"))


def level_text(req: Mapping[str, Any]) -> str:
    """ "MAY, promised by the declared admin-access" for a promised one, else the level."""
    promised = req.get("promised_by") or ()
    if not promised or req.get("level") == "MUST":
        return str(req.get("level"))
    return f"{req.get('level')}, promised by the declared {', '.join(promised)}"


def failures(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The requirements that decide the verdict and failed or errored, then the SHOULDs that
    did, catalog order."""
    found = [
        r
        for r in summary.get("requirements") or ()
        if r.get("status") in FAILED and (r.get("level") in JUDGED_LEVELS or decides(r))
    ]
    return sorted(found, key=lambda r: 0 if decides(r) else 1)


def failures_section(summary: Mapping[str, Any]) -> list[str]:
    if not summary.get("requirements"):
        return []
    out = ["## Failures", ""]
    found = failures(summary)
    if not found:
        return [*out, "No MUST or SHOULD requirement failed or errored.", ""]
    for req in found:
        status = "ERROR" if req.get("status") == "error" else "FAIL"
        cause = " (the harness or the cluster, not the driver)" if req.get("harness_error") else ""
        out.append(
            f"- **{cell(req.get('id'))}** ({level_text(req)}) {status}{cause}: "
            f"{_short(req.get('reason')) or 'no reason recorded'}"
        )
    return [*out, ""]


def first_step_section(summary: Mapping[str, Any]) -> list[str]:
    step = first_step(summary)
    return ["## What to do first", "", step, ""] if step else []


def first_step(summary: Mapping[str, Any]) -> str:
    """The first concrete next step, from what the run recorded."""
    if summary.get("setup_problem"):
        return f"Fix the set-up, then run again: {cell(summary['setup_problem'])}."
    if summary.get("no_verdict_reason"):
        if summary.get("no_verdict_detail"):
            return f"Fix this, then run the suite again: {cell(summary['no_verdict_detail'])}."
        return "Let the run finish, or run the suite again to completion (why: at the top)."
    reqs = summary.get("requirements") or []
    must_failed = [r for r in failures(summary) if decides(r)]
    if must_failed:
        return _fix_line(summary, must_failed[0])
    must_not_run = [r for r in reqs if r.get("level") == "MUST" and r.get("status") == "not-run"]
    if must_not_run and summary.get("verdict") == "INCOMPLETE":
        req = must_not_run[0]
        how = cell(req.get("remedy")) or "see its reason in the requirements table"
        return f"Make **{cell(req.get('id'))}** (MUST) run: {how}."
    if failures(summary):
        return _fix_line(summary, failures(summary)[0]) + " (A SHOULD does not decide the verdict.)"
    if summary.get("verdict") == "CONFORMANT":
        return "Nothing to fix: every MUST requirement passed. Publish `evidence.tar.gz`."
    reasons = summary.get("verdict_reasons") or []
    return f"Address the first reason above: {cell(reasons[0])}." if reasons else ""


def _fix_line(summary: Mapping[str, Any], req: Mapping[str, Any]) -> str:
    blame = "; the cluster or the harness caused it" if req.get("harness_error") else ""
    return (
        f"Fix **{cell(req.get('id'))}** ({level_text(req)}{blame}): "
        f"{_short(req.get('reason')) or 'no reason recorded'}. {evidence_pointer(summary, req)}"
    ).rstrip()


def evidence_pointer(summary: Mapping[str, Any], req: Mapping[str, Any]) -> str:
    """Where the failure's evidence is: its diagnostics directory when collected, else its
    test in junit.xml and the Allure report."""
    names = list(req.get("tests") or ())
    tests = {t.get("nodeid"): t for t in summary.get("tests") or ()}
    dirs = [tests[n]["diagnostics"] for n in names if (tests.get(n) or {}).get("diagnostics")]
    if dirs:
        return (
            f"Evidence: `{dirs[0]}/` (its claims, pods, events, the driver's and the kubelet's "
            "logs)."
        )
    artifacts = summary.get("artifacts") or {}
    where = " and ".join(
        f"`{artifacts[k]}`" for k in ("junit_xml", "allure_report") if artifacts.get(k)
    )
    if not names:
        return ""
    return f"Its test: `{cell(names[0])}`" + (f" (in {where})." if where else ".")
