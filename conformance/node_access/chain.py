"""Several ways in, tried in order: each operation goes to the first that can do it (the
profile's commands before the harness's own ways, as a vendor's word wins)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance.node_access.interface import InPlaceUpgrade, NodeAccess, Operation


class FirstAvailable(NodeAccess):
    def __init__(self, ways: Sequence[NodeAccess]) -> None:
        self.ways = tuple(ways)
        self.describe = ", then ".join(w.describe for w in self.ways) or NodeAccess.describe

    def way(self, op: Operation, node: str) -> NodeAccess | None:
        return next((w for w in self.ways if w.refusal(op, node) is None), None)

    def refusal(self, op: Operation, node: str) -> tuple[str, str] | None:
        if not self.ways:
            return super().refusal(op, node)
        if self.way(op, node) is not None:
            return None
        # A way that never does `op` says so with an empty reason: not worth telling.
        refusals = [r for w in self.ways if (r := w.refusal(op, node)) is not None and r[0]]
        if not refusals:
            return super().refusal(op, node)
        why = "; ".join(dict.fromkeys(r[0] for r in refusals))
        remedies = " or ".join(dict.fromkeys(r[1] for r in refusals if r[1]))
        return why, remedies

    def _pick(self, op: Operation, node: str) -> NodeAccess:
        way = self.way(op, node)
        assert way is not None, f"{op} {node}: called without require()"
        return way

    def how(self, op: Operation, node: str) -> str:
        way = self.way(op, node)
        return way.how(op, node) if way else self.describe

    def _restart_kubelet(self, node: str) -> None:
        self._pick(Operation.RESTART_KUBELET, node)._restart_kubelet(node)

    def _restart_node(self, node: str) -> None:
        self._pick(Operation.RESTART_NODE, node)._restart_node(node)

    def _stop_node(self, node: str) -> None:
        self._pick(Operation.STOP_NODE, node)._stop_node(node)

    def _start_node(self, node: str) -> None:
        self._pick(Operation.START_NODE, node)._start_node(node)

    def _run(self, node: str, argv: list[str]) -> str:
        return self._pick(Operation.RUN, node)._run(node, argv)

    def _host_path(self, node: str, path: str) -> Path:
        return self._pick(Operation.HOST_PATH, node)._host_path(node, path)

    def _in_place_upgrade(self, target: str, **kwargs: Any) -> InPlaceUpgrade:
        return self._pick(Operation.UPGRADE, "*")._in_place_upgrade(target, **kwargs)
