"""The collection hooks: lease order, --dra-requirement selection, and the catalog rules for
scenario tests (conformance/plugin/selection.py decides, this applies them to pytest items)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from conformance.model.requirements import REHEARSAL_SUITES
from conformance.plugin.lanes import Lanes, write_lanes
from conformance.plugin.markers import (
    DEVICES_MARK,
    NODE_EXCLUSIVE_MARK,
    REQUIREMENT_MARK,
    ItemView,
    across_nodes_wanted,
    parse_devices,
    parse_node_exclusive,
    renamed_marker_problems,
    run_order,
)
from conformance.plugin.selection import (
    Selection,
    check_collection,
    is_scenario,
)
from conformance.plugin.state import (
    REQUIREMENT_KEY,
    catalog_path,
    get_run_context,
    is_worker,
    load_run_catalog,
    plugin_state,
    rehearsing,
)
from conformance.report.outcomes import mark_suite_test
from conformance.report.provenance import BUNDLED_SCENARIOS
from conformance.run.context import RunContext
from conformance.run.lease import ALL
from conformance.scenario_api.placement import PlacementError, sole_node, whole_node_candidates


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The rehearsal suites (scenarios/upgrade) are collected only by a rehearsal
    (`--dra-upgrade-to`): they upgrade the cluster they run on."""
    if rehearsing(config):
        return None
    if any(
        collection_path == root / suite for root in _trees(config) for suite in REHEARSAL_SUITES
    ):
        return True
    return None


def _trees(config: pytest.Config) -> list[Path]:
    """The scenario trees: the catalog's folder and the bundled one (a catalog of its own)."""
    return list(dict.fromkeys([catalog_path(config).parent, BUNDLED_SCENARIOS]))


def item_view(item: pytest.Item) -> ItemView:
    marks = [(m.name, tuple(m.args), dict(m.kwargs)) for m in item.iter_markers()]
    return ItemView(item.nodeid, Path(item.path), marks)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if plugin_state(config).profile is not None:  # inert otherwise: only a run needs lease order
        # Same order on every xdist worker (the controller schedules by index): a stable sort,
        # on the durations the controller handed to every worker.
        durations = plugin_state(config).durations
        items.sort(key=lambda item: run_order(item_view(item), durations))
    _select_requirements(config, items)  # only when --dra-requirement asks for it
    context = get_run_context(config)
    if is_worker(config) and context is not None:
        write_lanes(context.harness_dir, lanes_of(items, context))


def lanes_of(items: list[pytest.Item], context: RunContext | None = None) -> Lanes:
    """Which tests the controller's scheduler treats apart (conformance.plugin.scheduling),
    and, with the run's context, the nodes each node-exclusive test may lease."""
    ranked = [(item.nodeid, run_order(item_view(item), {})) for item in items]
    candidates: dict[str, tuple[str, ...]] = {}
    restarts: set[str] = set()
    spanning: set[str] = set()
    on_one_node: set[str] = set()
    for item in items if context is not None else ():
        view = item_view(item)
        needs = parse_devices(view)[0]
        # Every device of a kind that lives on one node is leased there: such a test runs
        # beside a whole-node lease of another node like any pinned test (measured:
        # DRA-ALLOC-005/008/011 waited for the end of the whole-node tests, then queued on
        # each other at the run's end).
        if not across_nodes_wanted(view) and all(
            sole_node(context, n.kind) is not None for n in needs if n.count == ALL
        ):
            on_one_node.add(item.nodeid)
        whole_node, _ = parse_node_exclusive(view, context.profile.device_kinds)
        if whole_node is None:
            continue
        if whole_node.restarts_kubelet:
            restarts.add(item.nodeid)
        if needs:  # devices off the leased node
            spanning.add(item.nodeid)
        # A kind the harness cannot place: the test says why when it runs; until then any node.
        with contextlib.suppress(PlacementError):
            candidates[item.nodeid] = tuple(
                whole_node_candidates(context, whole_node.kind, whole_node.at_least)
            )
    return Lanes(
        whole_node=frozenset(n for n, (rank, _, _) in ranked if rank <= 1),
        anywhere=frozenset(
            n
            for n, (rank, anywhere, _) in ranked
            if rank == 2 and anywhere and n not in on_one_node
        ),
        cluster_wide=frozenset(n for n, (rank, _, _) in ranked if rank >= 3),
        candidates=candidates,
        restarts_kubelet=frozenset(restarts),
        spanning=frozenset(spanning),
    )


def _refuse_rehearsal_outside_one(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`pytest scenarios/upgrade` without --dra-upgrade-to (a folder given by name is
    collected even though pytest_ignore_collect skips it otherwise)."""
    if rehearsing(config):
        return
    for item in items:
        path = Path(item.path)
        if any(path.is_relative_to(r / s) for r in _trees(config) for s in REHEARSAL_SUITES):
            raise _CollectionRefused(
                f"{item.nodeid} rehearses a Kubernetes upgrade of the cluster; run it with "
                "--dra-upgrade-to VERSION (or `dra-conformance gate --rehearse --from V1 --to V2`)"
            )


def _select_requirements(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = set(config.getoption("dra_requirements", None) or [])
    if not wanted:
        return
    if plugin_state(config).catalog is not None:
        unknown = sorted(w for w in wanted if w not in plugin_state(config).catalog.by_id)
        if unknown:
            raise pytest.UsageError(
                f"--dra-requirement: unknown requirement(s) {', '.join(unknown)}; "
                "see scenarios/requirements.yaml"
            )
    keep, drop = [], []
    for item in items:
        marker = item.get_closest_marker(REQUIREMENT_MARK)
        (keep if marker and marker.args and marker.args[0] in wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_deselected(items: list[pytest.Item]) -> None:
    if not items:
        return
    config = items[0].config
    root = catalog_path(config).parent
    plugin_state(config).deselected_scenarios += sum(
        1 for i in items if is_scenario(item_view(i), root)
    )


def _selection(config: pytest.Config, deselected: int, errors: int) -> Selection:
    narrowing = []
    opt = config.option
    for flag, value in (
        ("-k", getattr(opt, "keyword", "")),
        ("-m", getattr(opt, "markexpr", "")),
        ("--lf", getattr(opt, "lf", False)),
        ("--sw", getattr(opt, "stepwise", False)),
        ("--deselect", getattr(opt, "deselect", None)),
        ("--ignore-glob", getattr(opt, "ignore_glob", None)),
    ):
        if value:
            narrowing.append(flag)
    ignored = [Path(p) for p in (getattr(opt, "ignore", None) or [])]
    return Selection(
        tuple(config.args),
        Path(config.invocation_params.dir),
        tuple(narrowing),
        tuple(ignored),
        deselected,
        rehearsal=rehearsing(config),
    )


class _CollectionRefused(Exception):
    pass


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reports the collected ids
def pytest_collection_finish(session: pytest.Session) -> None:
    try:
        _check_scenarios(session)
    except _CollectionRefused as exc:
        if not is_worker(session.config):
            raise pytest.UsageError(str(exc)) from None
        # A UsageError in an xdist worker becomes an INTERNALERROR that loses the message;
        # a failed collect report reaches the controller's terminal and fails the run.
        session.items[:] = []
        session.testsfailed += 1
        report = pytest.CollectReport(nodeid="", outcome="failed", longrepr=str(exc), result=[])
        session.config.hook.pytest_collectreport(report=report)


def _check_scenarios(session: pytest.Session) -> None:
    config = session.config
    _refuse_rehearsal_outside_one(config, session.items)
    state = plugin_state(config)
    root = catalog_path(config).parent
    views = {item.nodeid: item_view(item) for item in session.items}
    active = state.profile is not None
    scenarios = [
        i
        for i in session.items
        # A run refuses the old marker anywhere: such a test was meant as a scenario.
        if is_scenario(views[i.nodeid], root)
        or (active and renamed_marker_problems(views[i.nodeid]))
    ]
    if not scenarios:
        return
    catalog = state.catalog or load_run_catalog(config)
    if catalog is None:
        raise _CollectionRefused(
            f"{len(scenarios)} scenario test(s) collected, but the "
            f"requirements catalog {catalog_path(config)} does not exist"
        )
    kinds = state.profile.device_kinds if state.profile else None
    outcome = check_collection(
        [views[i.nodeid] for i in scenarios],
        catalog,
        root,
        _selection(config, state.deselected_scenarios, session.testsfailed),
        kinds,
        state.profile.capabilities if state.profile else None,
        suite_roots=[BUNDLED_SCENARIOS],
    )
    state.coverage_note = outcome.coverage_note
    if outcome.problems:
        lines = "\n".join(f"  {p}" for p in outcome.problems)
        raise _CollectionRefused(
            f"dra-conformance: {len(outcome.problems)} problem(s) with the "
            f"scenario tests ({outcome.coverage_note}):\n{lines}"
        )
    if state.profile is None and not config.option.collectonly:
        raise _CollectionRefused(
            "scenario tests need a driver profile: pass --dra-profile FILE "
            "(the bundled fake driver: --dra-profile drivers/fake/profile.yaml)"
        )
    for item in scenarios:
        req = outcome.requirements[item.nodeid]
        item.stash[REQUIREMENT_KEY] = req
        mark_suite_test(item, req.id)  # what its report says it proves (never a user property)
        leases = item.get_closest_marker(DEVICES_MARK) or item.get_closest_marker(
            NODE_EXCLUSIVE_MARK
        )
        if leases and "device_lease" not in item.fixturenames:
            # Lease before anything else is set up; release after everything is torn down.
            item.fixturenames.insert(0, "device_lease")  # type: ignore[attr-defined]


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    note = plugin_state(config).coverage_note
    return [f"dra-conformance: {note}"] if note else []


# --- applicability ----------------------------------------------------------------------------
