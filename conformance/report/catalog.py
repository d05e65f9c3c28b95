"""The requirement facts the report needs (ID, suite, level, statement), from the catalog.

The catalog (`scenarios/requirements.yaml`) is loaded and validated by
`conformance/model/requirements.py` alone; the harness hands it over (`set_catalog`), and a run
without the harness (unit tests, a standalone run) loads it through the same loader. So do the
known platform issues (`scenarios/known_issues.yaml`, conformance/model/known_issues.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.model.known_issues import KnownIssue, KnownIssuesError, load_known_issues
from conformance.model.requirements import CatalogError, Requirement, load_catalog
from conformance.suite_root import SUITE_ROOT

CATALOG_KEY = pytest.StashKey[Mapping[str, "RequirementInfo"]]()
CATALOG_ENV = "DRA_REQUIREMENTS_FILE"
DEFAULT_CATALOG = SUITE_ROOT / "scenarios" / "requirements.yaml"
KNOWN_ISSUES_KEY = pytest.StashKey[tuple[KnownIssue, ...]]()
KNOWN_ISSUES_ENV = "DRA_KNOWN_ISSUES_FILE"
KNOWN_ISSUES_FILE = "known_issues.yaml"


@dataclass(frozen=True)
class RequirementInfo:
    id: str
    suite: str
    level: str  # MUST | SHOULD | MAY
    statement: str
    disruptive: bool = False
    min_version: tuple[int, int] | None = None  # the Kubernetes minor that brought it
    capabilities: tuple[str, ...] = ()  # what the driver must declare for it to apply
    feature_gates: tuple[str, ...] = ()  # the cluster's gates its behaviour needs


def catalog_from(requirements: Iterable[Requirement]) -> dict[str, RequirementInfo]:
    """{id: RequirementInfo} in catalog order, from the loaded catalog (model.requirements)."""
    return {
        r.id: RequirementInfo(
            r.id,
            r.suite,
            r.level,
            r.statement,
            r.disruptive,
            r.min_version,
            r.capabilities,
            r.feature_gates,
        )
        for r in requirements
    }


def set_catalog(config: pytest.Config, requirements: Iterable[Requirement]) -> None:
    """Give the report the catalog the harness already loaded."""
    config.stash[CATALOG_KEY] = catalog_from(requirements)


def catalog_path(config: pytest.Config | None = None) -> Path:
    """Where the catalog is read from: `$DRA_REQUIREMENTS_FILE`, the rootdir's, or the package's."""
    env = os.environ.get(CATALOG_ENV)
    if env:
        return Path(env)
    if config is not None:
        candidate = Path(config.rootpath) / "scenarios" / "requirements.yaml"
        if candidate.is_file():
            return candidate
    return DEFAULT_CATALOG


def catalog_for(config: pytest.Config) -> tuple[dict[str, RequirementInfo], str | None]:
    """The catalog for this run and, when it could not be loaded, the reason (else None)."""
    stored = config.stash.get(CATALOG_KEY, None)
    if stored is not None:
        return dict(stored), None
    try:
        rehearsal = bool(config.getoption("dra_upgrade_to", None))
        loaded = load_catalog(catalog_path(config)).for_run(rehearsal=rehearsal)
        catalog = catalog_from(loaded.requirements)
    except CatalogError as exc:
        return {}, str(exc)
    config.stash[CATALOG_KEY] = catalog
    return catalog, None


def known_issues_path(config: pytest.Config | None = None) -> Path:
    """`$DRA_KNOWN_ISSUES_FILE`, else known_issues.yaml beside the catalog."""
    env = os.environ.get(KNOWN_ISSUES_ENV)
    if env:
        return Path(env)
    return catalog_path(config).with_name(KNOWN_ISSUES_FILE)


def set_known_issues(config: pytest.Config, issues: Iterable[KnownIssue]) -> None:
    """Give the report the known issues the harness already loaded and validated."""
    config.stash[KNOWN_ISSUES_KEY] = tuple(issues)


def known_issues_for(config: pytest.Config) -> tuple[tuple[KnownIssue, ...], str | None]:
    """The known platform issues for this run and, when they could not be loaded, why."""
    stored = config.stash.get(KNOWN_ISSUES_KEY, None)
    if stored is not None:
        return stored, None
    catalog, _ = catalog_for(config)
    try:
        issues = load_known_issues(known_issues_path(config), list(catalog) or None)
    except KnownIssuesError as exc:
        return (), str(exc)
    config.stash[KNOWN_ISSUES_KEY] = issues
    return issues, None
