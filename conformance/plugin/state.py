"""Per-process plugin state: stash keys, the run context of this process, and where
the run's catalog, run id and run directory come from (one rule for harness and report)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from conformance.model.known_issues import KnownIssuesError, load_known_issues
from conformance.model.profile import Profile
from conformance.model.requirements import (
    Catalog,
    CatalogError,
    Requirement,
    load_catalog,
)
from conformance.report.catalog import (
    catalog_path,
    known_issues_path,
    set_catalog,
    set_known_issues,
)
from conformance.run.context import RunContext
from conformance.run.lease import (
    DeviceLeaseBroker,
)

WORKERINPUT_CONTEXT = "dra_run_context"
WORKERINPUT_DURATIONS = "dra_test_durations"  # earlier runs' body seconds: the run order

CONTEXT_KEY = pytest.StashKey[RunContext]()
REQUIREMENT_KEY = pytest.StashKey[Requirement]()  # on scenario items
NAMESPACE_KEY = pytest.StashKey[str]()  # on items using test_namespace
STARTED_KEY = pytest.StashKey[float]()
CALL_FAILED_KEY = pytest.StashKey[bool]()  # the test body failed (set by its report)
STATE_KEY = pytest.StashKey["PluginState"]()


class DRAHarnessWarning(UserWarning):
    """Cleanup that did not complete; the end-of-run sweep retries."""


@dataclass
class PluginState:
    profile: Profile | None = None
    catalog: Catalog | None = None
    handle: Any = None  # conformance.cluster.provider.ClusterHandle (controller only)
    broker: DeviceLeaseBroker | None = None
    book: Any = None  # conformance.run.cluster_lease_book.ClusterLeaseBook of this process
    deselected_scenarios: int = 0
    coverage_note: str = ""
    sweep_summary: str = ""
    previous_sigterm: Any = None
    notes: list[str] = field(default_factory=list)
    # earlier runs' body seconds per test (conformance.run.durations); the same in every process
    durations: dict[str, float] = field(default_factory=dict)


def plugin_state(config: pytest.Config) -> PluginState:
    return config.stash.setdefault(STATE_KEY, PluginState())


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def get_run_context(config: pytest.Config) -> RunContext | None:
    """The run context of this process (None before it is read, or when inactive)."""
    return config.stash.get(CONTEXT_KEY, None)


def rehearsing(config: pytest.Config) -> bool:
    """Does this run rehearse an upgrade (`--dra-upgrade-to`)?"""
    return bool(config.getoption("dra_upgrade_to", None))


def load_run_catalog(config: pytest.Config) -> Catalog | None:
    """The catalog the run and its report share (None when the project has none)."""
    path = catalog_path(config)
    if not path.is_file():
        return None
    try:
        catalog = load_catalog(path).for_run(rehearsal=rehearsing(config))
    except CatalogError as exc:
        raise pytest.UsageError(str(exc)) from None
    set_catalog(config, catalog.requirements)
    try:  # checked against the catalog, so a typo in an ID stops the run before any cluster work
        issues = load_known_issues(known_issues_path(config), [r.id for r in catalog.requirements])
    except KnownIssuesError as exc:
        raise pytest.UsageError(str(exc)) from None
    set_known_issues(config, issues)
    return catalog
