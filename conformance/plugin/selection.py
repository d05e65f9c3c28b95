"""The rules of what a run selects among scenario tests: markers, requirement IDs, run order,
and MUST coverage. Pure: a pytest item comes in as an `ItemView` (conformance/plugin/collection.py
holds the hooks that apply the rules).

A scenario test is a test under the catalog's directory (`scenarios/`) or any test with a
`dra_requirement` marker. Each must carry exactly one `@pytest.mark.dra_requirement("<ID>")`
naming a catalog entry of the suite whose folder it lives in. Only the suite's own tests decide
a requirement: a marked test outside the suite's scenario trees (the catalog's directory, and
the bundled `scenarios/`) is a problem, whatever it claims. Our markers carry the `dra_` prefix
so that another project's own `requirement` marker is never taken for ours; a scenario test that
still uses an old, unprefixed name is refused with the new one (`renamed_marker_problems`).

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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from conformance.model.capabilities import CAPABILITIES
from conformance.model.requirements import REHEARSAL_SUITES, SUITES, Catalog, Requirement
from conformance.run.durations import duration_key
from conformance.run.lease import ALL, DeviceNeed

REQUIREMENT_MARK = "dra_requirement"
DEVICES_MARK = "dra_devices"
NODE_EXCLUSIVE_MARK = "dra_node_exclusive"
CAPABILITY_MARK = "dra_capability"
RUN_EARLY_MARK = "dra_run_early"
# Old name -> new name: refused on scenario tests, so a suite cannot half-migrate silently.
RENAMED_MARKS = {
    "requirement": REQUIREMENT_MARK,
    "devices": DEVICES_MARK,
    "node_exclusive": NODE_EXCLUSIVE_MARK,
    "capability": CAPABILITY_MARK,
}


@dataclass(frozen=True)
class ItemView:
    """What the rules need of a pytest item (pure data, so they are tested without pytest)."""

    nodeid: str
    path: Path
    markers: Sequence[tuple[str, tuple[Any, ...], Mapping[str, Any]]]  # (name, args, kwargs)

    def marks(self, name: str) -> list[tuple[tuple[Any, ...], Mapping[str, Any]]]:
        return [(args, kwargs) for n, args, kwargs in self.markers if n == name]


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


def renamed_marker_problems(item: ItemView) -> list[str]:
    """One line per old, unprefixed marker name the item uses, naming its replacement."""
    used = dict.fromkeys(name for name, _, _ in item.markers if name in RENAMED_MARKS)
    return [
        f"{item.nodeid}: marker {old!r} was renamed: use @pytest.mark.{RENAMED_MARKS[old]}(...)"
        for old in used
    ]


def with_new_marker_names(item: ItemView) -> ItemView:
    markers = [(RENAMED_MARKS.get(name, name), args, kw) for name, args, kw in item.markers]
    return replace(item, markers=markers)


def parse_devices(
    item: ItemView, kinds: Iterable[str] | None = None
) -> tuple[list[DeviceNeed], bool, list[str]]:
    """`dra_devices(kind, count=1, exclusive=False, across_nodes=False, guard=False)` marks ->
    (needs, exclusive, problems); `across_nodes_wanted` reads across_nodes."""
    needs: list[DeviceNeed] = []
    exclusive = False
    problems: list[str] = []
    known = list(kinds) if kinds is not None else None
    for args, kwargs in item.marks(DEVICES_MARK):
        form = f"{DEVICES_MARK}(kind, count=1, exclusive=False, across_nodes=False, guard=False)"
        extra = set(kwargs) - {"kind", "count", "exclusive", "across_nodes", "guard"}
        kind = args[0] if args else kwargs.get("kind")
        count = args[1] if len(args) > 1 else kwargs.get("count", 1)
        excl = args[2] if len(args) > 2 else kwargs.get("exclusive", False)
        if extra or len(args) > 3:
            problems.append(
                f"{item.nodeid}: {DEVICES_MARK} marker takes {form}, "
                f"got args={args!r} kwargs={dict(kwargs)!r}"
            )
            continue
        if not isinstance(kind, str) or not kind:
            problems.append(f"{item.nodeid}: {DEVICES_MARK} marker needs a kind first ({form})")
            continue
        if known is not None and kind not in known:
            problems.append(
                f"{item.nodeid}: {DEVICES_MARK}({kind!r}): the profile has no such device "
                f"kind; it names: {', '.join(known)}"
            )
            continue
        if count != ALL and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            problems.append(
                f"{item.nodeid}: {DEVICES_MARK}({kind!r}, count={count!r}): count must be "
                f"an integer >= 1 or 'all'"
            )
            continue
        bad_flags = [
            f for f in ("across_nodes", "guard") if not isinstance(kwargs.get(f, False), bool)
        ]
        if bad_flags:
            problems.append(
                f"{item.nodeid}: {DEVICES_MARK}({kind!r}, {bad_flags[0]}=...): "
                f"{bad_flags[0]} must be True or False"
            )
            continue
        if not isinstance(excl, bool):
            problems.append(
                f"{item.nodeid}: {DEVICES_MARK}({kind!r}, exclusive={excl!r}): "
                "exclusive must be True or False"
            )
            continue
        needs.append(DeviceNeed(kind, count, guard=kwargs.get("guard", False)))
        exclusive = exclusive or excl
    return needs, exclusive, problems


def across_nodes_wanted(item: ItemView) -> bool:
    """True if a `dra_devices` mark says the test's pods must span nodes: its devices are then
    leased anywhere, and its pods are not pinned to one node."""
    return any(kwargs.get("across_nodes") is True for _, kwargs in item.marks(DEVICES_MARK))


@dataclass(frozen=True)
class NodeExclusive:
    """`dra_node_exclusive(kind="default", at_least=1)`: the test leases one node whole, one that
    holds at least `at_least` node-local devices of `kind`."""

    kind: str = "default"
    at_least: int = 1
    # The test restarts the node's kubelet: a node with a "no kubelet restart" mark is not
    # granted until the mark expires, so the test waits in the queue, not holding a node.
    restarts_kubelet: bool = False


def parse_node_exclusive(
    item: ItemView, kinds: Iterable[str] | None = None
) -> tuple[NodeExclusive | None, list[str]]:
    """The `dra_node_exclusive` mark -> (what it asks, problems)."""
    marks = item.marks(NODE_EXCLUSIVE_MARK)
    if not marks:
        return None, []
    form = f'{NODE_EXCLUSIVE_MARK}(kind="default", at_least=1, restarts_kubelet=False)'
    args, kwargs = marks[0]
    kind = args[0] if args else kwargs.get("kind", "default")
    at_least = args[1] if len(args) > 1 else kwargs.get("at_least", 1)
    restarts_kubelet = kwargs.get("restarts_kubelet", False)
    known = list(kinds) if kinds is not None else None
    problem = None
    if len(marks) > 1:
        problem = f"{len(marks)} {NODE_EXCLUSIVE_MARK} markers; a test leases one node ({form})"
    elif len(args) > 2 or set(kwargs) - {"kind", "at_least", "restarts_kubelet"}:
        problem = f"{NODE_EXCLUSIVE_MARK} takes {form}, got args={args!r} kwargs={dict(kwargs)!r}"
    elif not isinstance(kind, str) or (known is not None and kind not in known):
        problem = f"{NODE_EXCLUSIVE_MARK}({kind!r}): not a device kind of the profile"
    elif isinstance(at_least, bool) or not isinstance(at_least, int) or at_least < 1:
        problem = f"{NODE_EXCLUSIVE_MARK}(at_least={at_least!r}): must be an integer >= 1"
    elif not isinstance(restarts_kubelet, bool):
        problem = f"{NODE_EXCLUSIVE_MARK}(restarts_kubelet={restarts_kubelet!r}): True or False"
    elif parse_devices(item, kinds)[1]:
        problem = f"{NODE_EXCLUSIVE_MARK} and {DEVICES_MARK}(..., exclusive=True): pick one scope"
    if problem:
        return None, [f"{item.nodeid}: {problem}"]
    return NodeExclusive(kind, at_least, restarts_kubelet), []


def lease_rank(item: ItemView) -> int:
    """Run order: tests marked dra_run_early first (they start a clock, such as a kubelet
    grace period, that the run must wait out before it ends), then node-exclusive ones (long:
    drains, restarts, settle windows), then the rest, which fill the gaps, and cluster-wide
    exclusive tests last: such a test waits until no other test holds a device, and every
    later request queues behind it, so anywhere else it would stall every worker; last, it
    waits only for the tests still running (xdist hands out the last items last). Stable
    within a rank."""
    if item.marks(RUN_EARLY_MARK):
        return 0
    if parse_devices(item)[1]:
        return 3
    if item.marks(NODE_EXCLUSIVE_MARK):
        return 1
    return 2


def run_order(item: ItemView, durations: Mapping[str, float]) -> tuple[int, int, float]:
    """The sort key of a run: `lease_rank`; within it, tests whose devices may be anywhere
    (across_nodes, or every device of a kind) after the rest, since they wait until no node of
    theirs is leased whole and hold back whole-node leases meanwhile; then the longest first
    (by earlier runs, `conformance.run.durations`), so the run does not end on one long test.

    Among node-exclusive tests, those that also lease devices (a drain's replacements, on
    another node) go first: each conflicts with a node lease of any other node, so they run
    one after another anyway, best while the node-pinned tests fill the other node. The rest
    need only their own node and then pair up on two nodes (a measured timeline: interleaved,
    the drains kept them one at a time)."""
    rank, needs = lease_rank(item), parse_devices(item)[0]
    if rank == 1:
        second = 0 if needs else 1
    else:
        second = int(across_nodes_wanted(item) or any(n.count == ALL for n in needs))
    return rank, second, -durations.get(duration_key(item.nodeid), 0.0)


def parse_capabilities(item: ItemView) -> tuple[list[str], list[str]]:
    names: list[str] = []
    problems: list[str] = []
    for args, _ in item.marks(CAPABILITY_MARK):
        for name in args:
            if name in CAPABILITIES:
                names.append(name)
            else:
                problems.append(
                    f"{item.nodeid}: {CAPABILITY_MARK}({name!r}) is not a known capability "
                    f"(known: {', '.join(sorted(CAPABILITIES))})"
                )
    return names, problems


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
