"""Provenance: the scenario tree's digest, the suite's reference (committed or installed), and
a swapped catalog marking a real run's report "modified suite — not a certification" in every
format, which `verify` then refuses."""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from helpers.flipper import write_flipper

from conformance.report import provenance, suite_files
from conformance.report.provenance import (
    MODIFIED_MARK,
    edited_scenarios,
    sha256_of,
    suite_digests,
    tree_digest,
    tree_files,
)
from conformance.report.verify import verify_report
from conformance.suite_root import SUITE_ROOT
from unit.report.test_verify import never_ready_report, working_tree


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_tree_digest_covers_paths_and_content_of_py_and_yaml_only(tmp_path: Path) -> None:
    files = {"requirements.yaml": "schema: 1\n", "core/test_a.py": "x = 1\n"}
    one = _tree(tmp_path / "one", files)
    digest, count = tree_digest(tree_files(one))
    assert count == 2 and digest.startswith("sha256:") and len(digest) == 71
    # other files (bytecode, notes, durations) do not count
    _tree(one, {"core/__pycache__/test_a.cpython-311.py": "junk", "README.md": "notes"})
    _tree(one, {"durations.json": "{}"})
    assert tree_digest(tree_files(one)) == (digest, 2)
    assert tree_digest(tree_files(_tree(tmp_path / "two", files)))[0] == digest  # stable
    moved = _tree(tmp_path / "moved", {**files, "core/test_a.py": "", "allocation/test_a.py": ""})
    assert tree_digest(tree_files(moved))[0] != digest
    (one / "core/test_a.py").write_text("x = 2\n")
    assert tree_digest(tree_files(one))[0] != digest


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
    )


def test_the_reference_is_what_is_committed_in_a_checkout_else_the_files(tmp_path: Path) -> None:
    files = {"scenarios/requirements.yaml": "schema: 1\n", "scenarios/core/test_a.py": "x = 1\n"}
    root = _tree(tmp_path / "checkout", files)
    installed = suite_digests(root)  # no .git: the files as they are
    assert installed.catalog == sha256_of(b"schema: 1\n") and installed.known_issues is None
    assert installed.source.startswith("the installed suite")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "suite")
    (root / "scenarios/core/test_a.py").write_text("x = 2\n")  # an edit not committed
    (root / "scenarios/core/test_new.py").write_text("y = 1\n")  # a file not committed
    committed = suite_digests(root)
    assert committed.scenarios == installed.scenarios
    assert committed.source.endswith("(git HEAD)")
    assert suite_digests(root).scenarios != tree_digest(tree_files(root / "scenarios"))[0]


def test_the_shipped_suite_is_its_own_reference() -> None:
    assert suite_digests().catalog == sha256_of(
        subprocess.run(
            ["git", "-C", str(SUITE_ROOT), "show", "HEAD:scenarios/requirements.yaml"],
            capture_output=True,
            check=True,
        ).stdout
    )


def test_a_swapped_catalog_marks_the_report_modified_in_every_format(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog" / "requirements.yaml"
    catalog.parent.mkdir()
    shutil.copyfile(SUITE_ROOT / "scenarios/requirements.yaml", catalog)
    report = never_ready_report(tmp_path, {"DRA_REQUIREMENTS_FILE": str(catalog)})
    summary = json.loads((report / "summary.json").read_text())
    assert summary["modified"] is True
    reason = f"the requirements catalog {catalog} ($DRA_REQUIREMENTS_FILE) is not the suite's own"
    assert reason in summary["modified_reasons"]
    # the copy is byte for byte the suite's: the digest cannot tell, the path does
    assert summary["provenance"]["catalog"]["sha256"] == working_tree().catalog
    assert summary["provenance"]["scenarios"]["path"] == "scenarios"
    # modified is the verdict: never CONFORMANT, never exit 0, whatever the tests said
    assert (summary["verdict"], summary["exit_code"]) == ("MODIFIED", 4)
    assert summary["unmodified_verdict"] == "NON-CONFORMANT"
    assert summary["verdict_reasons"][0] == f"modified suite: {reason}"
    markdown = (report / "summary.md").read_text()
    assert markdown.splitlines()[0] == (
        "# DRA conformance: **MODIFIED SUITE — not a certification** (its tests alone: "
        "NON-CONFORMANT)"
    )
    assert "## Provenance" in markdown and f"- {reason}" in markdown
    props = {
        p.get("name"): p.get("value")
        for p in ET.parse(report / "junit.xml").getroot().iter("property")
    }
    assert props["dra_modified"].startswith(f"{MODIFIED_MARK}: {reason}; the known-issue list ")
    environment = (report / "allure-results/environment.properties").read_text()
    assert "Suite.modified=modified suite — not a certification" in environment
    result = verify_report(report, working_tree())
    assert not result.verified
    assert result.line.startswith(f"not verified: {MODIFIED_MARK}: {reason}"), result.line


def test_edited_scenario_files_are_named_against_the_committed_suite(tmp_path: Path) -> None:
    files = {"scenarios/requirements.yaml": "schema: 1\n", "scenarios/core/test_a.py": "x = 1\n"}
    root = _tree(tmp_path / "checkout", files)
    assert edited_scenarios(root) == []  # no git checkout: the installed files are the suite
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "suite")
    assert edited_scenarios(root) == []
    (root / "scenarios/core/test_a.py").write_text("x = 2\n")
    (root / "scenarios/core/test_new.py").write_text("y = 1\n")
    (root / "scenarios/requirements.yaml").unlink()
    (root / "scenarios/core/notes.txt").write_text("not a suite file\n")
    assert edited_scenarios(root) == ["core/test_a.py", "core/test_new.py", "requirements.yaml"]


def _suite(edited: list[str]) -> dict:
    return {"sha256": "sha256:0", "files": 1, "reference": "git", "edited": edited}


def test_a_run_of_an_edited_bundled_tree_marks_itself_modified(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(provenance, "edited_scenarios", lambda: ["core/test_core_claims.py"])
    monkeypatch.setattr(provenance, "suite_state", lambda: _suite(["scenarios/core/x.py"]))
    result = provenance.run_provenance(
        catalog=provenance.BUNDLED_SCENARIOS / "requirements.yaml",
        known_issues=provenance.BUNDLED_SCENARIOS / "known_issues.yaml",
        facts=None,
    )
    assert result["modified"] is True
    assert result["modified_reasons"] == [
        "1 file(s) of the scenario tree differ from the committed suite: "
        "scenarios/core/test_core_claims.py"
    ]


def test_an_edited_plugin_or_root_conftest_marks_the_run_modified(monkeypatch) -> None:
    edited = ["conformance/plugin/__init__.py", "conftest.py"]
    monkeypatch.setattr(provenance, "edited_scenarios", lambda: [])
    monkeypatch.setattr(provenance, "suite_state", lambda: _suite(edited))
    result = provenance.run_provenance(
        catalog=provenance.BUNDLED_SCENARIOS / "requirements.yaml",
        known_issues=provenance.BUNDLED_SCENARIOS / "known_issues.yaml",
        facts=None,
    )
    assert result["modified_reasons"] == [
        "2 file(s) of the suite differ from the committed suite: "
        "conformance/plugin/__init__.py and 1 more"
    ]


def test_the_suite_state_names_every_file_that_differs_from_head(tmp_path: Path) -> None:
    files = {
        "conformance/plugin/__init__.py": "x = 1\n",
        "scenarios/core/test_a.py": "y = 1\n",
        "conftest.py": "",
        "pyproject.toml": "[project]\n",
        "docs/notes.md": "not the suite\n",
    }
    root = _tree(tmp_path / "checkout", files)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "suite")
    clean = suite_files.suite_state(root)
    assert clean["clean"] is True and clean["edited"] == [] and clean["files"] == 4
    assert len(clean["commit"]) == 40
    (root / "conformance/plugin/__init__.py").write_text("x = 2\n")
    (root / "conformance/plugin/flipper.py").write_text("z = 1\n")
    (root / "conftest.py").write_text("pytest_plugins = ['flipper']\n")
    (root / "docs/notes.md").write_text("edited, not the suite\n")
    (root / "conformance/plugin/__pycache__").mkdir()
    (root / "conformance/plugin/__pycache__/x.pyc").write_bytes(b"\0")
    edited = suite_files.suite_state(root)
    assert edited["edited"] == [
        "conformance/plugin/__init__.py",
        "conformance/plugin/flipper.py",
        "conftest.py",
    ]
    assert edited["clean"] is False and edited["sha256"] != clean["sha256"]


def test_a_plugin_that_flips_outcomes_makes_a_plain_pytest_run_modified(
    monkeypatch, tmp_path: Path
) -> None:
    # what the sealed command line refuses can still reach a plain `pytest` run: the report
    # sees the plugin among what pytest loaded, and the verdict is MODIFIED, not CONFORMANT
    write_flipper(tmp_path, "dra_flipper")
    monkeypatch.syspath_prepend(str(tmp_path))
    report = never_ready_report(tmp_path, {"PYTEST_PLUGINS": "dra_flipper"}, expected=0)
    summary = json.loads((report / "summary.json").read_text())
    assert summary["counts"]["tests"]["failed"] == 0  # the flipper did its work
    assert (summary["verdict"], summary["exit_code"]) == ("MODIFIED", 4)
    assert "$PYTEST_PLUGINS loaded code into the run: dra_flipper" in summary["modified_reasons"]
    assert (
        "a pytest plugin from outside the suite was loaded: dra_flipper (dra_flipper)"
        in summary["modified_reasons"]
    )
    assert "dra_flipper" in summary["provenance"]["pytest_plugins"]
    result = verify_report(report, working_tree())
    assert not result.verified and result.line.startswith(f"not verified: {MODIFIED_MARK}: ")


def test_the_profile_path_carries_no_local_path() -> None:
    from conformance.report.facts import RunFacts

    facts = RunFacts(profile_path=str(SUITE_ROOT / "drivers/fake/profile.yaml"))
    result = provenance.run_provenance(
        catalog=provenance.BUNDLED_SCENARIOS / "requirements.yaml",
        known_issues=provenance.BUNDLED_SCENARIOS / "known_issues.yaml",
        facts=facts,
    )
    assert result["provenance"]["profile"]["path"] == "drivers/fake/profile.yaml"
