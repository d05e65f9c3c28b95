"""The rules of what a run selects among scenario tests: requirement IDs and MUST coverage.
Pure: a pytest item comes in as an `ItemView` (conformance/plugin/collection.py
holds the hooks that apply the rules).

A scenario test is a test under the catalog's directory (`scenarios/`) or any test with a
`dra_requirement` marker. Each must carry exactly one `@pytest.mark.dra_requirement("<ID>")`
naming a catalog entry of the suite whose folder it lives in. Only the suite's own tests decide
a requirement: a marked test outside the suite's scenario trees (the catalog's directory, and
the bundled `scenarios/`) is a problem, whatever it claims (the markers themselves:
conformance/plugin/markers.py).

Coverage ("every MUST requirement has a test") can only be judged from a complete collection:
- it is checked for every suite whose folder was collected whole: the command line names
  the catalog directory, an ancestor of it, or the suite folder itself (`pytest scenarios`,
  `pytest scenarios/core`), or nothing at all while testpaths includes it;
- it is not checked at all when the selection is narrowed by -k, -m, --lf, --sw,
  --deselect or --ignore-glob, when a scenario item was deselected by any plugin, or when
  collection had errors (a file that fails to import is reported as such, not as missing
  MUST tests);
- a file, node id or --ignore'd path inside a suite folder leaves that suite unchecked.
So `pytest scenarios/core/test_x.py -k foo` runs just that, and `pytest scenarios` fails
at collection until every MUST requirement has a test.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from conformance.model.requirements import REHEARSAL_SUITES, SUITES, Catalog, Requirement
from conformance.plugin.markers import (
    REQUIREMENT_MARK,
    ItemView,
    parse_capabilities,
    parse_devices,
    parse_node_exclusive,
    renamed_marker_problems,
    with_new_marker_names,
)


@dataclass
class CollectionOutcome:
    requirements: dict[str, Requirement] = field(default_factory=dict)  # nodeid -> requirement
    problems: list[str] = field(default_factory=list)
    coverage_note: str = ""


def is_under(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def suite_folder(path: Path, root: Path) -> str | None:
    """The suite a test file's folder stands for (`scenarios/core/x.py` -> `core`)."""
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        return None
    return rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in SUITES else None


def is_scenario(item: ItemView, root: Path) -> bool:
    return is_under(item.path, root) or bool(item.marks(REQUIREMENT_MARK))


def lacks_capability(item: ItemView, req: Requirement | None, capabilities: Iterable[str]) -> bool:
    """True if the test's requirement or its own `dra_capability` marks name a capability
    the profile does not declare (the test is then not applicable)."""
    wanted = set(parse_capabilities(item)[0]) | set(req.capabilities if req else ())
    return not wanted <= set(capabilities)


def _requirement_of(
    item: ItemView, catalog: Catalog, root: Path, problems: list[str]
) -> Requirement | None:
    marks = item.marks(REQUIREMENT_MARK)
    if not marks:
        problems.append(
            f"{item.nodeid}: no {REQUIREMENT_MARK} marker; add "
            f'@pytest.mark.{REQUIREMENT_MARK}("<ID>") with an ID from {catalog.source}'
        )
        return None
    if len(marks) > 1:
        ids = [a[0] if a else None for a, _ in marks]
        problems.append(
            f"{item.nodeid}: {len(marks)} {REQUIREMENT_MARK} markers {ids}; a test "
            "verifies exactly one requirement (split it)"
        )
        return None
    args, kwargs = marks[0]
    if len(args) != 1 or kwargs or not isinstance(args[0], str):
        problems.append(
            f"{item.nodeid}: {REQUIREMENT_MARK} marker takes one ID string, "
            f"got args={args!r} kwargs={dict(kwargs)!r}"
        )
        return None
    rid = args[0]
    req = catalog.by_id.get(rid)
    if req is None:
        best = catalog.suggest_id(rid)
        hint = f" (did you mean {best}?)" if best else ""
        problems.append(f"{item.nodeid}: requirement {rid} is not in {catalog.source}{hint}")
        return None
    folder = suite_folder(item.path, root)
    if folder is not None and folder != req.suite:
        problems.append(
            f"{item.nodeid}: {rid} belongs to suite {req.suite}, but the test is in "
            f"the {folder} folder; move it to {root.name}/{req.suite}/"
        )
        return None
    return req


@dataclass(frozen=True)
class Selection:
    """How the user narrowed the collection (from pytest's options)."""

    args: Sequence[str]  # config.args, as given
    invocation_dir: Path
    narrowing_options: Sequence[str] = ()  # e.g. ["-k", "--lf"] when in effect
    ignored_paths: Sequence[Path] = ()
    deselected_scenarios: int = 0
    collection_errors: int = 0
    rehearsal: bool = False  # --dra-upgrade-to: the rehearsal suites are collected


def fully_collected_suites(selection: Selection, root: Path) -> tuple[set[str], str]:
    """The suites whose MUST coverage can be judged, and a note saying why (not)."""
    if selection.narrowing_options:
        return set(), (
            "requirement coverage not checked: selection narrowed by "
            + ", ".join(selection.narrowing_options)
        )
    if selection.collection_errors:
        # A file that failed to import would otherwise read as "MUST has no test".
        return set(), (
            f"requirement coverage not checked: {selection.collection_errors} collection error(s)"
        )
    if selection.deselected_scenarios:
        return set(), (
            f"requirement coverage not checked: {selection.deselected_scenarios} "
            "scenario test(s) deselected"
        )
    root = root.resolve()
    suites: set[str] = set()
    for arg in selection.args:
        path_text, _, rest = arg.partition("::")
        path = (selection.invocation_dir / path_text).resolve()
        if rest:
            continue  # a node id: part of a file at most
        if path == root or root.is_relative_to(path):
            suites.update(SUITES)
        elif path.parent == root and path.name in SUITES and path.is_dir():
            suites.add(path.name)
    for ignored in selection.ignored_paths:
        ignored = ignored.resolve()
        if root.is_relative_to(ignored):
            suites.clear()
        elif ignored.is_relative_to(root):
            rel = ignored.relative_to(root).parts
            suites.discard(rel[0] if rel else "")
    if not selection.rehearsal:
        suites.difference_update(REHEARSAL_SUITES)  # never collected outside a rehearsal
    if not suites:
        return set(), "requirement coverage not checked: no whole suite folder was collected"
    return suites, "requirement coverage checked for suites: " + ", ".join(sorted(suites))


def foreign_problem(item: ItemView, roots: Sequence[Path]) -> str | None:
    """The problem of a test outside every scenario tree that claims a requirement."""
    if any(is_under(item.path, root) for root in roots):
        return None
    return f"{item.nodeid}: only the suite's own tests under scenarios/ can decide a requirement"


def check_collection(
    items: Sequence[ItemView],
    catalog: Catalog,
    root: Path,
    selection: Selection,
    kinds: Iterable[str] | None = None,
    capabilities: Iterable[str] | None = None,
    suite_roots: Sequence[Path] = (),
) -> CollectionOutcome:
    """`kinds` and `capabilities` are the profile's (None: no profile, not checked);
    `suite_roots`: the scenario trees whose tests may decide a requirement (`root` always)."""
    outcome = CollectionOutcome()
    kinds = list(kinds) if kinds is not None else None
    roots = [root, *suite_roots]
    for item in items:
        renamed = renamed_marker_problems(item)
        if renamed:  # judge the rest as if renamed, so the rename is the one thing reported
            outcome.problems += renamed
            item = with_new_marker_names(item)
        foreign = foreign_problem(item, roots)
        if foreign:
            outcome.problems.append(foreign)
            continue
        req = _requirement_of(item, catalog, root, outcome.problems)
        if req is not None:
            outcome.requirements[item.nodeid] = req
        # A test gated on a capability the profile lacks is not applicable when it would run;
        # the device kinds that capability brings need not exist in the profile.
        gated_off = capabilities is not None and lacks_capability(item, req, capabilities)
        item_kinds = None if gated_off else kinds
        outcome.problems += parse_devices(item, item_kinds)[2]
        outcome.problems += parse_node_exclusive(item, item_kinds)[1]
        outcome.problems += parse_capabilities(item)[1]
    suites, outcome.coverage_note = fully_collected_suites(selection, root)
    covered = {r.id for r in outcome.requirements.values()}
    missing = [
        r
        for r in catalog.requirements
        if r.level == "MUST" and r.suite in suites and r.id not in covered
    ]
    for r in missing:
        outcome.problems.append(
            f"MUST requirement {r.id} (suite {r.suite}) has no test: add one "
            f"to {root.name}/{r.suite}/ marked "
            f'@pytest.mark.{REQUIREMENT_MARK}("{r.id}")'
        )
    return outcome
