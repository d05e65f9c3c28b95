"""Known platform issues (conformance/model/known_issues.py): matching, validation. How versions
are read and ordered: tests/unit/model/test_kube_version.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.model.known_issues import (
    KnownIssue,
    KnownIssuesError,
    affecting,
    load_known_issues,
    parse_known_issues,
)
from conformance.model.requirements import load_catalog
from conformance.suite_root import SUITE_ROOT

pytest_plugins = ["pytester"]

IDS = ["DRA-LOSS-001", "DRA-LOSS-002", "DRA-CORE-001"]
LINK = "https://github.com/kubernetes/kubernetes/pull/139681"


def entry(**change: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "requirement": "DRA-LOSS-002",
        "affected": {"from": "1.36.0", "fixed_in": "1.36.3"},
        "link": LINK,
        "summary": "the scheduler ignores new DeviceTaintRules",
    }
    base.update(change)
    return {k: v for k, v in base.items() if v is not None}


def parse(*entries: dict[str, Any]) -> tuple[KnownIssue, ...]:
    return parse_known_issues(
        {"schema": 1, "issues": list(entries)}, shown="k.yaml", requirement_ids=IDS
    )


@pytest.mark.parametrize(
    ("version", "affected"),
    [
        ("v1.35.4", False),
        ("v1.36.0-rc.1", False),  # before the first affected release
        ("v1.36.0", True),
        ("v1.36.2", True),
        ("v1.36.2-gke.1200", True),
        ("v1.36.3", False),  # fixed_in is the first release with the fix
        ("v1.37.2", False),
        ("unknown", False),
    ],
)
def test_an_issue_affects_from_its_first_release_to_before_the_fix(
    version: str, affected: bool
) -> None:
    (issue,) = parse(entry())
    assert issue.affects(version) is affected
    assert issue.versions == "1.36.0 to before 1.36.3"


def test_an_unfixed_issue_affects_every_later_version() -> None:
    (issue,) = parse(entry(affected={"from": "1.34"}))
    assert issue.affects("v1.38.0-beta.0") and not issue.affects("v1.33.9")
    assert issue.versions == "1.34.0 and later (not fixed yet)"


def test_affecting_keys_the_issues_of_a_version_by_requirement() -> None:
    issues = parse(
        entry(),
        entry(requirement="DRA-LOSS-001"),
        entry(requirement="DRA-CORE-001", affected={"from": "1.37.0"}),
    )
    assert set(affecting(issues, "v1.36.2")) == {"DRA-LOSS-001", "DRA-LOSS-002"}
    assert set(affecting(issues, "v1.37.2")) == {"DRA-CORE-001"}
    assert affecting(issues, None) == {}
    assert affecting(issues, "v1.36.2")["DRA-LOSS-002"].note == (
        f"known platform issue {LINK}: the scheduler ignores new DeviceTaintRules"
    )


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (entry(requirement="DRA-LOSS-02"), "issues[0].requirement: expected a requirement ID"),
        (
            entry(requirement="DRA-LOSS-003"),
            "issues[0].requirement: DRA-LOSS-003 is not in the requirements catalog; "
            "did you mean 'DRA-LOSS-002'?",
        ),
        (
            entry(link="github.com/x"),
            'issues[0].link: expected an https:// link, got "github.com/x"',
        ),
        (entry(summary=None), "issues[0].summary: required field is missing"),
        (
            entry(affected={"fixed_in": "1.36.3"}),
            "issues[0].affected.from: required field is missing",
        ),
        (
            entry(affected={"from": 1.36}),
            "issues[0].affected.from: expected a quoted Kubernetes version",
        ),
        (
            entry(affected={"from": "1.36.3", "fixed_in": "1.36.3"}),
            "issues[0].affected: fixed_in 1.36.3 is not after from 1.36.3",
        ),
        (entry(fixed="1.36.3"), "issues[0].fixed: unknown field"),
    ],
)
def test_a_bad_entry_is_one_line_naming_the_field(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(KnownIssuesError) as caught:
        parse(bad)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith("known platform issues k.yaml: ")
    assert message in text


def test_a_missing_file_is_an_empty_list_and_a_bad_schema_is_refused(tmp_path: Path) -> None:
    assert load_known_issues(tmp_path / "absent.yaml") == ()
    bad = tmp_path / "known_issues.yaml"
    bad.write_text("schema: 2\nissues: []\n")
    with pytest.raises(KnownIssuesError, match=r"schema: expected 1, got 2"):
        load_known_issues(bad)


def test_the_shipped_list_names_catalog_requirements_with_checked_ranges() -> None:
    scenarios = SUITE_ROOT / "scenarios"
    catalog = load_catalog(scenarios / "requirements.yaml")
    issues = load_known_issues(
        scenarios / "known_issues.yaml", [r.id for r in catalog.requirements]
    )
    for issue in issues:
        assert issue.link.startswith("https://github.com/kubernetes/kubernetes/")
        assert not issue.affects("v1.37.2")  # every listed bug is fixed in the default version
    versions = ("v1.35.4", "v1.36.1", "v1.36.2")
    affected = {v: {i.requirement for i in issues if i.affects(v)} for v in versions}
    assert affected == {
        "v1.35.4": {"DRA-DEL-003", "DRA-ALLOC-016", "DRA-LOSS-004", "DRA-LOSS-008"},
        "v1.36.1": {"DRA-LOSS-001", "DRA-LOSS-002", "DRA-DEL-003", "DRA-ALLOC-016"},
        "v1.36.2": {"DRA-LOSS-001", "DRA-LOSS-002", "DRA-DEL-003"},
    }
    # a test that would crash a component the tests beside it need is not run there
    disruptive = {i.requirement for i in issues if i.disrupts}
    assert disruptive == {"DRA-ALLOC-016"}


def test_disrupts_is_optional_and_one_line() -> None:
    [quiet] = parse(entry())
    assert quiet.disrupts is None
    [loud] = parse(entry(disrupts="its claim crashes\n  kube-scheduler"))
    assert loud.disrupts == "its claim crashes kube-scheduler"
    with pytest.raises(KnownIssuesError, match=r"issues\[0\]\.disrupts"):
        parse(entry(disrupts=""))


def test_run_refuses_a_bad_entry_with_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from conformance.cli.app import main

    bad = tmp_path / "known_issues.yaml"
    bad.write_text(
        'schema: 1\nissues:\n  - {requirement: DRA-ZZZ-999, affected: {from: "1.36"}, '
        "link: https://x.example/1, summary: s}\n"
    )
    monkeypatch.setenv("DRA_KNOWN_ISSUES_FILE", str(bad))
    profile = str(SUITE_ROOT / "drivers" / "fake" / "profile.yaml")
    assert main(["run", "--profile", profile]) == 2  # before any cluster work
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err.startswith(
        f"dra-conformance: error: known platform issues {bad}: issues[0].requirement: "
        "DRA-ZZZ-999 is not in the requirements catalog"
    )


def test_the_plugin_refuses_a_bad_entry_as_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The list beside the catalog is checked against it before anything is collected."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("DRA_REQUIREMENTS_FILE", raising=False)
    monkeypatch.delenv("DRA_KNOWN_ISSUES_FILE", raising=False)
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(pytester.path / "cache"))
    scenarios = pytester.path / "scenarios"
    scenarios.mkdir()
    (scenarios / "requirements.yaml").write_text(
        "schema: 1\nrequirements:\n"
        "  - {id: DRA-CORE-001, suite: core, level: MUST, statement: Registers.}\n"
    )
    (scenarios / "known_issues.yaml").write_text(
        'schema: 1\nissues:\n  - {requirement: DRA-CORE-001, affected: {from: "1.36.3", '
        'fixed_in: "1.36.1"}, link: https://x.example/1, summary: s}\n'
    )
    (pytester.path / "profile.yaml").write_text(
        "apiVersion: dra-conformance.io/v1alpha1\nkind: DriverProfile\ndriver: gpu.example.com\n"
        "deviceClasses: {default: gpu.example.com}\ninstall: {method: preinstalled}\n"
        "verification: {method: env, nameRegex: '^GPU_', value: device}\n"
    )
    result = pytester.runpytest_inprocess(
        "-p",
        "conformance.plugin",
        "-p",
        "no:cacheprovider",
        "--dra-profile",
        "profile.yaml",
        "--collect-only",
        "scenarios",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert (
        f"known platform issues {scenarios / 'known_issues.yaml'}: issues[0].affected: "
        "fixed_in 1.36.1 is not after from 1.36.3"
    ) in result.stderr.str()
