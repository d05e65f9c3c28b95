"""What a scenario test's markers ask for: the `dra_` marker names, the devices, node and
capabilities a test declares, and the run order they give. Pure: a pytest item comes in as an
`ItemView` (conformance/plugin/collection.py holds the hooks that read them).

Our markers carry the `dra_` prefix so that another project's own `requirement` marker is never
taken for ours; a scenario test that still uses an old, unprefixed name is refused with the new
one (`renamed_marker_problems`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from conformance.model.capabilities import CAPABILITIES
from conformance.run.durations import duration_key
from conformance.run.lease import ALL, DeviceNeed

REQUIREMENT_MARK = "dra_requirement"
DEVICES_MARK = "dra_devices"
NODE_EXCLUSIVE_MARK = "dra_node_exclusive"
CAPABILITY_MARK = "dra_capability"
RUN_EARLY_MARK = "dra_run_early"
# The test causes kubelet DRA errors on purpose (conformance/plugin/kubelet_check.py).
KUBELET_ERRORS_MARK = "dra_kubelet_errors"
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
