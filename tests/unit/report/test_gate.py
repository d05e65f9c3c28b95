"""The upgrade gate's comparison: what blocks (a MUST that passed and no longer does), what is
reported only, and the two files it writes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.report.gate import (
    Change,
    classify,
    compare,
    load_summary,
    rehearsal_of,
    side_of,
    to_json,
    to_markdown,
    write,
)


def summary(version: str, statuses: dict[str, str], scope=None, levels=None) -> dict:
    levels = levels or {}
    return {
        "run": {"id": f"run-{version}"},
        "cluster": {"kubernetes_version": version},
        "verdict": "CONFORMANT",
        "verdict_scope": scope,
        "requirements": [
            {
                "id": rid,
                "suite": rid.split("-")[1].lower(),
                "level": levels.get(rid, "MUST"),
                "status": status,
                "reason": f"why {rid} is {status}",
            }
            for rid, status in statuses.items()
        ],
    }


@pytest.mark.parametrize(
    ("before", "after", "change"),
    [
        ("passed", "passed", Change.UNCHANGED),
        ("passed", "failed", Change.REGRESSION),
        ("passed", "error", Change.REGRESSION),
        ("passed", "not-run", Change.REGRESSION),  # never counted as met
        ("passed", "not-applicable", Change.REGRESSION),  # the version lacks it: not met
        ("failed", "passed", Change.FIX),
        ("not-run", "passed", Change.FIX),
        ("not-applicable", "passed", Change.NEWLY_APPLICABLE),
        ("not-applicable", "failed", Change.NEWLY_APPLICABLE),
        ("failed", "not-run", Change.CHANGED),
        ("failed", "not-applicable", Change.NO_LONGER_APPLICABLE),
        (None, "passed", Change.ONLY_AFTER),
        ("passed", None, Change.ONLY_BEFORE),
        # a known upstream bug of the new version is not met either: the gate blocks on it
        ("passed", "known-platform-issue", Change.REGRESSION),
        ("known-platform-issue", "passed", Change.FIX),
        ("known-platform-issue", "failed", Change.CHANGED),
    ],
)
def test_classify(before, after, change) -> None:
    assert classify(before, after) is change


DROPPED = (
    "the driver profile does not declare capability extended-resource (add extended-resource "
    "to capabilities in p.yaml if the driver supports it)"
)


@pytest.mark.parametrize(
    ("reason", "change"),
    [
        (DROPPED, Change.NO_LONGER_APPLICABLE),  # the profile's choice, not the platform's
        ("feature gate DRAExtendedResource is not known to the cluster's API server", None),
        ("feature gate DRAExtendedResource is disabled in the cluster", None),
        ("feature gate DRAExtendedResource is disabled in the cluster; " + DROPPED, None),
        ("", None),
    ],
)
def test_a_must_that_passed_and_is_not_applicable_after(reason: str, change) -> None:
    assert classify("passed", "not-applicable", reason) is (change or Change.REGRESSION)
    before = side_of(summary("v1.37.2", {"DRA-EXT-001": "passed"}))
    after_summary = summary("v1.40.0", {"DRA-EXT-001": "not-applicable"})
    after_summary["requirements"][0]["reason"] = reason
    result = compare(before, side_of(after_summary))
    assert result.passed is (change is not None)


def test_only_a_must_regression_blocks() -> None:
    before = side_of(
        summary(
            "v1.36.3",
            {"DRA-CORE-001": "passed", "DRA-ALLOC-005": "passed", "DRA-LOSS-007": "failed"},
            levels={"DRA-ALLOC-005": "SHOULD", "DRA-LOSS-007": "SHOULD"},
        )
    )
    after = side_of(
        summary(
            "v1.37.2",
            {"DRA-CORE-001": "passed", "DRA-ALLOC-005": "failed", "DRA-LOSS-007": "passed"},
            levels={"DRA-ALLOC-005": "SHOULD", "DRA-LOSS-007": "SHOULD"},
        )
    )
    result = compare(before, after)
    assert result.passed and result.exit_code == 0
    assert [c.id for c in result.of(Change.REGRESSION)] == ["DRA-ALLOC-005"]  # SHOULD: reported
    assert [c.id for c in result.of(Change.FIX)] == ["DRA-LOSS-007"]

    worse = side_of(summary("v1.37.2", {"DRA-CORE-001": "not-run", "DRA-ALLOC-005": "passed"}))
    blocked = compare(before, worse)
    assert not blocked.passed and blocked.exit_code == 1
    assert [c.id for c in blocked.blocking] == ["DRA-CORE-001"]


def test_requirements_outside_the_verdict_scope_are_not_compared() -> None:
    scoped = summary(
        "v1.37.2", {"DRA-CORE-001": "passed", "DRA-DRAIN-001": "not-run"}, scope=["core"]
    )
    assert dict(side_of(scoped).statuses) == {"DRA-CORE-001": "passed"}
    by_id = summary("v1.37.2", {"DRA-CORE-001": "passed", "DRA-CORE-002": "not-run"})
    by_id["verdict_scope"] = ["DRA-CORE-002"]
    assert dict(side_of(by_id).statuses) == {"DRA-CORE-002": "not-run"}


def test_files_name_the_blocking_must(tmp_path: Path) -> None:
    before = side_of(summary("v1.36.3", {"DRA-CORE-003": "passed", "DRA-CORE-004": "passed"}))
    after = side_of(summary("v1.37.2", {"DRA-CORE-003": "failed", "DRA-CORE-004": "passed"}))
    md, js = write(compare(before, after), tmp_path / "gate")
    text = md.read_text()
    assert text.startswith("# Upgrade gate v1.36.3 -> v1.37.2: FAIL")
    assert "- DRA-CORE-003: failed — why DRA-CORE-003 is failed" in text
    assert "| DRA-CORE-003 | MUST | passed | failed | regression |" in text
    assert "DRA-CORE-004 |" not in text  # unchanged rows are counted, not listed
    document = json.loads(js.read_text())
    assert document["passed"] is False and document["blocking"] == ["DRA-CORE-003"]
    assert document["from"]["label"] == "v1.36.3" and document["to"]["run_id"] == "run-v1.37.2"


def test_load_summary_accepts_a_report_directory_and_refuses_other_json(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps(summary("v1.37.2", {})))
    assert load_summary(tmp_path)["cluster"]["kubernetes_version"] == "v1.37.2"
    other = tmp_path / "other.json"
    other.write_text("{}")
    with pytest.raises(ValueError, match="not a dra-conformance summary.json"):
        load_summary(other)


def test_a_must_that_hits_a_known_platform_issue_after_blocks() -> None:
    before = side_of(summary("v1.35.4", {"DRA-LOSS-002": "passed"}))
    after = side_of(summary("v1.36.2", {"DRA-LOSS-002": "known-platform-issue"}))
    result = compare(before, after)
    assert not result.passed and result.exit_code == 1
    assert [c.id for c in result.blocking] == ["DRA-LOSS-002"]
    assert "known-platform-issue" in to_markdown(result)


def test_a_failed_rehearsal_fails_a_gate_without_regressions() -> None:
    before = side_of(summary("v1.36.3", {"DRA-CORE-001": "passed"}))
    after = side_of(summary("v1.37.2", {"DRA-CORE-001": "passed"}))
    assert compare(before, after).passed
    rehearsed = summary(
        "v1.36.3",
        {"DRA-UPG-001": "passed", "DRA-UPG-004": "failed"},
        scope=["DRA-UPG-001", "DRA-UPG-004"],
    )
    rehearsed["verdict"] = "NON-CONFORMANT"
    result = replace(
        compare(before, after), rehearsal=rehearsal_of(rehearsed, "v1.36.3", "v1.37.2")
    )
    assert not result.passed and result.exit_code == 1
    assert result.rehearsal is not None and result.rehearsal.not_met == ["DRA-UPG-004"]
    markdown = to_markdown(result)
    assert "## In-place upgrade rehearsal v1.36.3 -> v1.37.2: FAIL" in markdown
    assert "| DRA-UPG-004 | MUST | failed | why DRA-UPG-004 is failed |" in markdown
    document = to_json(result)
    assert document["passed"] is False
    assert document["rehearsal"]["requirements"] == {
        "DRA-UPG-001": "passed",
        "DRA-UPG-004": "failed",
    }


def test_a_conformant_rehearsal_keeps_the_gate_green() -> None:
    side = side_of(summary("v1.36.3", {"DRA-CORE-001": "passed"}))
    rehearsed = summary("v1.36.3", {"DRA-UPG-001": "passed"}, scope=["DRA-UPG-001"])
    result = replace(compare(side, side), rehearsal=rehearsal_of(rehearsed, "v1.36.3", "v1.37.2"))
    assert result.passed and "rehearsal v1.36.3 -> v1.37.2: PASS" in to_markdown(result)
