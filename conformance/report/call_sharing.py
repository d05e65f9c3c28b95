"""How many other tests share a test's driver figures: the kubelet counts every call on a node,
so a test's per-test figures (tests[].driver_calls) also hold the calls of each test whose
window overlapped its own on one of the nodes the figures came from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def call_nodes(test: Mapping[str, Any]) -> set[str]:
    """The nodes a test's driver figures came from (none: not measured)."""
    return {str(n) for row in test.get("driver_calls") or () for n in row.get("nodes") or ()}


def _window(test: Mapping[str, Any]) -> tuple[float, float] | None:
    start, stop = test.get("start"), test.get("stop")
    if not isinstance(start, int | float) or not isinstance(stop, int | float):
        return None
    return float(start), float(stop)


def shared_with(tests: Iterable[Mapping[str, Any]]) -> list[int | None]:
    """Per test, in order: how many other tests ran on one of its figures' nodes while it ran
    (None: it has no figures, or no window to compare)."""
    tests = list(tests)
    # A test that made calls on a node has that node in its own figures: those are the ones.
    spans = [(_window(t), call_nodes(t)) for t in tests]
    counts: list[int | None] = []
    for index, (window, nodes) in enumerate(spans):
        if window is None or not nodes:
            counts.append(None)
            continue
        counts.append(
            sum(
                1
                for other, (span, theirs) in enumerate(spans)
                if other != index
                and span is not None
                and nodes & theirs
                and span[0] < window[1]
                and window[0] < span[1]
            )
        )
    return counts


def with_sharing(tests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """tests[] with `driver_calls_shared_with` set on each (null: not measured)."""
    return [
        test | {"driver_calls_shared_with": n}
        for test, n in zip(tests, shared_with(tests), strict=True)
    ]
