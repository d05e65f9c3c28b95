"""Compare the evaluator's verdicts with the API server's and the scheduler's.

Pure functions over plain values, so a deliberately wrong verdict can be fed in and must come
out as a disagreement (tests/unit/cel/test_corpus.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# cel-go's position prefix, as the API server prints it in a compile error.
_POSITION = re.compile(r"<input>:(\d+):(\d+):")


@dataclass(frozen=True)
class ServerVerdict:
    """What the API server said of a DeviceClass carrying the selector."""

    accepted: bool
    message: str = ""  # the rejection's message (empty when accepted)


@dataclass
class Tally:
    """Agreements and, per disagreement, one line saying what differs."""

    what: str
    agreements: int = 0
    disagreements: list[str] = field(default_factory=list)

    def agree(self) -> None:
        self.agreements += 1

    def differ(self, line: str) -> None:
        self.disagreements.append(line)

    def summary(self) -> str:
        return (
            f"{self.what}: {self.agreements} agreement(s), "
            f"{len(self.disagreements)} disagreement(s)"
        )

    def report(self) -> str:
        return "\n".join([self.summary(), *(f"  {d}" for d in self.disagreements)])


def server_position(message: str) -> tuple[int, int] | None:
    found = _POSITION.search(message)
    return (int(found.group(1)), int(found.group(2))) if found else None


def compare_compile(
    expressions: Sequence[str], evaluator: Sequence[Any | None], server: Sequence[ServerVerdict]
) -> Tally:
    """`evaluator[i]` is a CompileProblem (message, line, column) or None (compiles). A verdict
    agrees when both accept, or both reject with the same words (the server's message holds
    the evaluator's) and the same position (when the server names one)."""
    tally = Tally("compile verdicts vs the API server")
    for expression, mine, theirs in zip(expressions, evaluator, server, strict=True):
        if (mine is None) != theirs.accepted:
            said = "compiles" if mine is None else f"rejects it ({mine.message})"
            server_said = "accepts it" if theirs.accepted else f"rejects it ({theirs.message})"
            tally.differ(f"{expression!r}: the evaluator {said}, the API server {server_said}")
            continue
        if mine is not None and mine.message not in theirs.message:
            tally.differ(
                f"{expression!r}: the evaluator says {mine.message!r}, "
                f"the API server {theirs.message!r}"
            )
            continue
        position = None if theirs.accepted else server_position(theirs.message)
        if position is not None and (mine.line, mine.column) != position:
            tally.differ(
                f"{expression!r}: the evaluator puts the error at {mine.line}:{mine.column}, "
                f"the API server at {position[0]}:{position[1]}"
            )
            continue
        tally.agree()
    return tally


Outcome = Literal["allocated", "unschedulable", "error"]


@dataclass(frozen=True)
class NodeVerdict:
    """A claim for all the devices one selector matches on one node: allocated (these
    devices), unschedulable (it matches none), or an error (evaluating it erred on a device,
    which the allocator does not skip: it stops)."""

    outcome: Outcome
    devices: frozenset[str] = frozenset()

    def __str__(self) -> str:
        if self.outcome == "allocated":
            return f"allocated {', '.join(sorted(self.devices))}"
        return self.outcome


def predicted_verdicts(
    evaluator: Any, expressions: Sequence[str], nodes: Mapping[str, Mapping[str, tuple[str, Any]]]
) -> dict[tuple[str, str], NodeVerdict]:
    """(expression, node) -> what the scheduler must do, from the evaluator's match of each
    expression on each node's devices (`nodes`: node -> device id -> (driver, device))."""
    out = {}
    for node, devices in nodes.items():
        ids = list(devices)
        rows = evaluator.match(expressions, [devices[i] for i in ids])
        for expression, row in zip(expressions, rows, strict=True):
            out[(expression, node)] = predicted_verdict(dict(zip(ids, row, strict=True)))
    return out


def predicted_verdict(results: Mapping[str, Any]) -> NodeVerdict:
    """What the scheduler must do with an all-devices claim on a node, from the evaluator's
    MatchResult (matches, error) per device id of that node."""
    if any(r.error is not None for r in results.values()):
        return NodeVerdict("error")
    matched = frozenset(d for d, r in results.items() if r.matches)
    return NodeVerdict("allocated", matched) if matched else NodeVerdict("unschedulable")


def compare_match(
    predicted: Mapping[tuple[str, str], NodeVerdict],
    observed: Mapping[tuple[str, str], NodeVerdict],
) -> Tally:
    """Both keyed by (expression, node)."""
    tally = Tally("match verdicts vs the scheduler")
    for key in sorted(set(predicted) | set(observed)):
        mine, theirs = predicted.get(key), observed.get(key)
        if mine is None or theirs is None or mine != theirs:
            expression, node = key
            tally.differ(
                f"{expression!r} on {node}: the evaluator says {mine or 'nothing'}, "
                f"the scheduler {theirs or 'nothing'}"
            )
        else:
            tally.agree()
    return tally
