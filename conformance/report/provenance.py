"""Where a report comes from: the suite's version, digests of the catalog, the known-issue list
and the scenario tree as run, the profile, the cluster and the command line; and whether the
suite that made it was the suite ("modified suite — not a certification").

A run knows by path whether it used the suite's own files: a catalog or known-issue list from
`$DRA_REQUIREMENTS_FILE` / `$DRA_KNOWN_ISSUES_FILE` or a rootdir of its own, a scenario tree
other than the bundled `scenarios/`, tests from outside that tree, or a report written without
the harness mark it modified. So does a bundled tree whose files differ from what is committed
when the suite is a git checkout (`edited_scenarios`: an edited scenario or catalog shows in the
run's own report). Whether the files' *content* is the suite's is decided again by
`dra-conformance verify` (conformance/report/verify.py): it compares the digests with the
suite's reference, `suite_digests()` — what is committed (git HEAD) when the suite is a git
checkout, else the installed package's files — so no digest list has to be shipped, and an
edited checkout or installed copy shows.

The scenario tree's digest is a sha256 over the sorted relative paths and the sha256 of the
content of its *.py and *.yaml files (the files a wheel carries), `__pycache__` left out.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.model.requirements import SUITES
from conformance.observe.redact import redact_text
from conformance.report.catalog import CATALOG_ENV, KNOWN_ISSUES_ENV, KNOWN_ISSUES_FILE
from conformance.report.facts import RunFacts
from conformance.report.paths import portable, portable_path
from conformance.report.seal import input_reasons, loaded_code, recorded_inputs
from conformance.report.suite_files import (
    committed_files,
    edited_reason,
    file_digest,
    sha256_of,
    suite_state,
    tree_digest,
)
from conformance.suite_root import SUITE_ROOT

PACKAGE = "dra-conformance"
MODIFIED_MARK = "modified suite — not a certification"
STANDALONE_KEY = pytest.StashKey[bool]()  # set by `-p conformance.report.standalone`
SCENARIOS_DIR = "scenarios"
CATALOG_FILE = "requirements.yaml"
BUNDLED_SCENARIOS = SUITE_ROOT / SCENARIOS_DIR
TREE_SUFFIXES = (".py", ".yaml")


def suite_version() -> str:
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _in_tree(rel: str) -> bool:
    return rel.endswith(TREE_SUFFIXES) and "__pycache__" not in rel.split("/")


def tree_files(root: Path) -> Iterator[tuple[str, bytes]]:
    """The scenario tree's *.py and *.yaml files as (relative posix path, content)."""
    for path in sorted(Path(root).rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and _in_tree(rel):
            yield rel, path.read_bytes()


@dataclass(frozen=True)
class SuiteDigests:
    """The digests of one copy of the suite (None: the file is not there)."""

    version: str
    catalog: str | None
    known_issues: str | None
    scenarios: str | None
    source: str  # where they were read from, for messages


def _committed_scenarios(root: Path) -> dict[str, bytes] | None:
    """The scenario tree as committed (git HEAD) when `root` is a git checkout, else None."""
    committed = committed_files(root)
    if committed is None:
        return None
    prefix = SCENARIOS_DIR + "/"
    return {
        rel.removeprefix(prefix): data for rel, data in committed.items() if rel.startswith(prefix)
    }


def edited_scenarios(root: Path = SUITE_ROOT) -> list[str]:
    """The scenario tree's files (relative to it) that differ from what is committed: edited,
    added or removed. Empty when they agree, or when `root` is no git checkout (an installed
    suite is its own reference; `verify` compares it)."""
    committed = _committed_scenarios(root)
    if committed is None:
        return []
    present = dict(tree_files(root / SCENARIOS_DIR))
    return sorted(
        rel for rel in committed.keys() | present.keys() if committed.get(rel) != present.get(rel)
    )


def suite_digests(root: Path = SUITE_ROOT) -> SuiteDigests:
    """The reference: the suite as committed (a git checkout) or as installed (a package)."""
    files = _committed_scenarios(root)
    source = f"the suite committed at {root} (git HEAD)"
    if files is None:
        files = dict(tree_files(root / SCENARIOS_DIR))
        source = f"the installed suite {suite_version()}"
    catalog, known = files.get(CATALOG_FILE), files.get(KNOWN_ISSUES_FILE)
    return SuiteDigests(
        version=suite_version(),
        catalog=sha256_of(catalog) if catalog is not None else None,
        known_issues=sha256_of(known) if known is not None else None,
        scenarios=tree_digest(files.items())[0] if files else None,
        source=source,
    )


def scenario_tree(catalog: Path) -> Path:
    """The tree a run's scenario tests come from: the catalog's folder when it holds suite
    folders (the suite's own, or a copy beside a catalog of its own), else the bundled one."""
    folder = Path(catalog).parent
    if any((folder / suite).is_dir() for suite in SUITES):
        return folder
    return BUNDLED_SCENARIOS


def _same(a: Path, b: Path) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def shown(path: Path) -> str:
    """A path as a report shows it: no local absolute path (conformance/report/paths.py)."""
    return portable_path(path)


def command_line(argv: Sequence[str] | None = None) -> list[str]:
    """The command that started the run (the CLI's, or pytest's), credentials removed."""
    argv = list(sys.argv if argv is None else argv)
    if argv:
        name = Path(argv[0]).name
        argv[0] = "dra-conformance" if name == "__main__.py" else name
    return [portable(redact_text(a)) for a in argv]


def run_provenance(
    *,
    catalog: Path,
    known_issues: Path,
    facts: RunFacts | None,
    outside_tests: Sequence[str] = (),
    harness: bool = True,
    argv: Sequence[str] | None = None,
    loaded: Mapping[str, Any] | None = None,
    inputs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """summary.json's `provenance`, `modified` and `modified_reasons`.

    `outside_tests`: node ids of tests that ran from outside the suite's scenario tree;
    `harness`: False for a report written without the conformance harness (standalone);
    `loaded`: the plugins and conftests the run held (`seal.loaded_code`); `inputs`: the other
    inputs that change outcomes (`seal.recorded_inputs`).
    """
    facts = facts or RunFacts()
    tree = scenario_tree(catalog)
    tree_sha, tree_count = tree_digest(tree_files(tree)) if tree.is_dir() else (None, 0)
    suite = suite_state()
    reasons: list[str] = []
    if not harness:
        reasons.append(
            "written without the conformance harness (no driver profile): nothing checked "
            "which tests may decide a requirement"
        )
    bundled_known = BUNDLED_SCENARIOS / KNOWN_ISSUES_FILE
    for what, path, bundled, env in (
        ("requirements catalog", catalog, BUNDLED_SCENARIOS / CATALOG_FILE, CATALOG_ENV),
        ("known-issue list", known_issues, bundled_known, KNOWN_ISSUES_ENV),
    ):
        if not _same(path, bundled):
            via = f" (${env})" if os.environ.get(env) else ""
            reasons.append(f"the {what} {shown(path)}{via} is not the suite's own")
    if not _same(tree, BUNDLED_SCENARIOS):
        reasons.append(f"the scenario tests come from {shown(tree)}, not the suite's own tree")
    elif edited := edited_scenarios():
        more = f" and {len(edited) - 1} more" if len(edited) > 1 else ""
        reasons.append(
            f"{len(edited)} file(s) of the scenario tree differ from the committed suite: "
            f"{SCENARIOS_DIR}/{edited[0]}{more}"
        )
    code_edits = {**suite, "edited": [e for e in suite["edited"] if not _in_scenarios(e)]}
    if reason := edited_reason(code_edits):
        reasons.append(reason)
    if outside_tests:
        more = f" and {len(outside_tests) - 1} more" if len(outside_tests) > 1 else ""
        reasons.append(
            f"{len(outside_tests)} test(s) from outside the suite's scenario tree ran: "
            f"{outside_tests[0]}{more}"
        )
    reasons += list((loaded or {}).get("foreign") or [])
    reasons += input_reasons(inputs or {})
    provenance = {
        "suite_version": suite_version(),
        "suite": suite,
        "catalog": {"path": shown(catalog), "sha256": file_digest(catalog)},
        "known_issues": {"path": shown(known_issues), "sha256": file_digest(known_issues)},
        "scenarios": {"path": shown(tree), "sha256": tree_sha, "files": tree_count},
        "profile": {
            "path": shown(Path(facts.profile_path)) if facts.profile_path else None,
            "sha256": facts.profile_digest or None,
        },
        "kubernetes_version": facts.kubernetes_version or None,
        "cluster_provider": facts.cluster_provider or None,
        "command_line": command_line(argv),
        "pytest_plugins": list((loaded or {}).get("plugins") or []),
        "conftests": list((loaded or {}).get("conftests") or []),
        "inputs": dict(inputs or {}),
    }
    return {"provenance": provenance, "modified": bool(reasons), "modified_reasons": reasons}


def _in_scenarios(rel: str) -> bool:
    return rel.startswith(SCENARIOS_DIR + "/")


def provenance_for(config: pytest.Config, records: Iterable[Any], facts: RunFacts | None) -> dict:
    """`run_provenance` for this pytest run (the collector, at the end of the run)."""
    from conformance.report.catalog import catalog_path, known_issues_path
    from conformance.report.options import option

    harness = bool(option(config, "dra_profile", None)) and not config.stash.get(
        STANDALONE_KEY, False
    )
    outside = [r.nodeid for r in records if harness and not r.requirements and not r.collect_error]
    catalog = catalog_path(config)
    return run_provenance(
        catalog=catalog,
        known_issues=known_issues_path(config),
        facts=facts,
        outside_tests=outside,
        harness=harness,
        loaded=loaded_code(config.pluginmanager.list_name_plugin(), scenario_tree(catalog)),
        inputs=recorded_inputs(os.environ, float(option(config, "dra_timeout_scale", 1.0) or 1.0)),
    )


def modified_text(summary: Mapping[str, Any]) -> str:
    """ "modified suite — not a certification: <reasons>", or "" for an unmodified run."""
    if not summary.get("modified"):
        return ""
    return f"{MODIFIED_MARK}: " + "; ".join(summary.get("modified_reasons") or [])


def junit_properties(summary: Mapping[str, Any], summary_sha256: str) -> dict[str, str]:
    """The provenance JUnit carries on its test suite, with summary.json's digest (so an edit
    of either file shows: `dra-conformance verify`)."""
    prov = summary.get("provenance") or {}
    props = {
        "dra_run_id": (summary.get("run") or {}).get("id"),
        "dra_verdict": summary.get("verdict"),
        "dra_suite_version": prov.get("suite_version"),
        "dra_catalog_sha256": (prov.get("catalog") or {}).get("sha256"),
        "dra_known_issues_sha256": (prov.get("known_issues") or {}).get("sha256"),
        "dra_scenarios_sha256": (prov.get("scenarios") or {}).get("sha256"),
        "dra_profile_sha256": (prov.get("profile") or {}).get("sha256"),
        "dra_kubernetes_version": prov.get("kubernetes_version"),
        "dra_cluster_provider": prov.get("cluster_provider"),
        "dra_command_line": " ".join(prov.get("command_line") or []),
        "dra_modified": modified_text(summary) or "no",
        SUMMARY_DIGEST_PROPERTY: summary_sha256,
    }
    return {k: str(v) for k, v in props.items() if v not in (None, "")}


SUMMARY_DIGEST_PROPERTY = "dra_summary_sha256"


def markdown_section(summary: Mapping[str, Any]) -> list[str]:
    """summary.md's Provenance section."""
    prov = summary.get("provenance")
    if not prov:
        return []
    out = ["## Provenance", ""]
    catalog, known = prov.get("catalog") or {}, prov.get("known_issues") or {}
    tree, profile = prov.get("scenarios") or {}, prov.get("profile") or {}
    out.append(f"- suite: {PACKAGE} {prov.get('suite_version')}")
    out.append(f"- requirements catalog: `{catalog.get('path')}` ({catalog.get('sha256')})")
    out.append(f"- known issues: `{known.get('path')}` ({known.get('sha256') or 'none'})")
    out.append(
        f"- scenario tree: `{tree.get('path')}` ({tree.get('sha256')}, {tree.get('files')} files)"
    )
    out.append(f"- profile: `{profile.get('path')}` ({profile.get('sha256') or 'no digest'})")
    out.append(
        f"- Kubernetes {prov.get('kubernetes_version') or 'unknown'} "
        f"({prov.get('cluster_provider') or 'unknown'} cluster)"
    )
    out.append(f"- command line: `{' '.join(prov.get('command_line') or [])}`")
    out.append("")
    if summary.get("modified"):
        out.append(f"**{MODIFIED_MARK}:**")
        out.append("")
        out.extend(f"- {reason}" for reason in summary.get("modified_reasons") or [])
    else:
        out.append(
            "The suite's own catalog, known issues and scenario tree: anyone can check this "
            "report against the suite with `dra-conformance verify <report dir>`."
        )
    out.append("")
    return out
