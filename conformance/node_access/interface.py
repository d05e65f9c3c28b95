"""The node-operations interface: one method per operation, each refusing with
`NodeOperationUnavailable` (why, and what to configure) where its way in cannot do it."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from conformance.errors import ConformanceError
from conformance.model.outcome import not_run


class Operation(StrEnum):
    RESTART_KUBELET = "restart the kubelet of"
    RESTART_NODE = "restart"
    STOP_NODE = "stop"
    START_NODE = "start"
    RUN = "run a command on"  # reading files, listing CDI specs, the kubelet's log
    HOST_PATH = "reach from the harness host a directory of"
    UPGRADE = "upgrade in place"


class NodeOperationUnavailable(ConformanceError):
    """`problem`: why the operation cannot be done on the node; `remedy`: what to configure."""


@contextmanager
def not_run_unless_available() -> Iterator[None]:
    """A scenario's way to say "this requirement did not run" when a node operation is
    unavailable (the outcome a disruptive requirement has had without it: not run)."""
    try:
        yield
    except NodeOperationUnavailable as exc:
        not_run(exc.problem, exc.remedy)


class InPlaceUpgrade(Protocol):
    """What the upgrade rehearsal drives: stage the new version, upgrade the control plane,
    then each worker (drained first)."""

    version: str
    workers: list[str]
    k8s: Any
    timings: dict[str, float]
    logs_dir: Path

    def stage(self) -> None: ...
    def upgrade_control_plane(self) -> None: ...
    def upgrade_node(self, node: str) -> None: ...
    def drain(self, node: str, *, timeout_s: float) -> Any: ...


# The CDI spec files a runtime reads (.json and .yaml), one path a line, in the given order.
def cdi_listing_script(dirs: Sequence[str]) -> str:
    loops = [
        f'for f in {shlex.quote(d)}/*.json {shlex.quote(d)}/*.yaml; do [ -f "$f" ] && echo "$f"; '
        "done"
        for d in dirs
    ]
    return "; ".join(loops) + "; true"


def journal_argv(unit: str, since_epoch: int, lines: int) -> list[str]:
    return [
        "journalctl",
        "-u",
        unit,
        "--no-pager",
        "-o",
        "short-iso",
        "--since",
        f"@{since_epoch}",
        "-n",
        str(lines),
    ]


class NodeAccess:
    """Node operations. `unavailable(op, node)` says why an operation cannot be done (None: it
    can); the operations call it first. A subclass implements what its way in can do; running
    a command on the node (`run`) gives reading files, CDI listings and the kubelet's log."""

    describe = "no way to reach nodes"

    def refusal(self, op: Operation, node: str) -> tuple[str, str] | None:
        """(why `op` cannot be done on `node`, what to configure), or None when it can; an
        empty reason: this way never does `op`."""
        return ("no way to reach the nodes", "see nodeCommands in docs/profile.md")

    def unavailable(self, op: Operation, node: str) -> NodeOperationUnavailable | None:
        refused = self.refusal(op, node)
        if refused is None:
            return None
        where = "this cluster" if node == "*" else f"node {node}"
        return NodeOperationUnavailable(f"cannot {op} {where}: {refused[0]}", refused[1])

    def require(self, op: Operation, node: str) -> None:
        """Raise NodeOperationUnavailable unless `op` can be done on `node`."""
        refusal = self.unavailable(op, node)
        if refusal is not None:
            raise refusal

    # --- disruptive ---------------------------------------------------------------------

    def restart_kubelet(self, node: str) -> None:
        self.require(Operation.RESTART_KUBELET, node)
        self._restart_kubelet(node)

    def restart_node(self, node: str) -> None:
        self.require(Operation.RESTART_NODE, node)
        self._restart_node(node)

    def stop_node(self, node: str) -> None:
        self.require(Operation.STOP_NODE, node)
        self._stop_node(node)

    def start_node(self, node: str) -> None:
        self.require(Operation.START_NODE, node)
        self._start_node(node)

    def how(self, op: Operation, node: str) -> str:
        """How `op` is done on `node`, for the report's step."""
        return self.describe

    # --- reading ------------------------------------------------------------------------

    def run(self, node: str, argv: Sequence[str]) -> str:
        """Run `argv` on the node (in its host namespaces); its standard output. A command
        that fails raises RuntimeError naming it."""
        self.require(Operation.RUN, node)
        return self._run(node, list(argv))

    def read_host_file(self, node: str, path: str) -> str:
        return self.run(node, ["cat", path])

    def list_cdi_specs(self, node: str, dirs: Sequence[str]) -> list[str]:
        """The CDI spec files (.json, .yaml) in `dirs` of the node, in order."""
        out = self.run(node, ["sh", "-c", cdi_listing_script(dirs)])
        return [line for line in out.splitlines() if line.strip()]

    def kubelet_log(self, node: str, since_epoch: int, lines: int) -> str:
        return self.run(node, journal_argv("kubelet", since_epoch, lines))

    def host_path(self, node: str, path: str) -> Path:
        """`path` of the node as the harness host sees it (a device plugin serving there)."""
        self.require(Operation.HOST_PATH, node)
        return self._host_path(node, path)

    def in_place_upgrade(self, target: str, **kwargs: Any) -> InPlaceUpgrade:
        """An upgrade of the whole cluster to `target` (kwargs: k8s, progress, logs_dir,
        run_id)."""
        self.require(Operation.UPGRADE, "*")
        return self._in_place_upgrade(target, **kwargs)

    # --- what a way in implements (only for what `unavailable` allows) --------------------

    def _restart_kubelet(self, node: str) -> None:
        raise NotImplementedError

    def _restart_node(self, node: str) -> None:
        raise NotImplementedError

    def _stop_node(self, node: str) -> None:
        raise NotImplementedError

    def _start_node(self, node: str) -> None:
        raise NotImplementedError

    def _run(self, node: str, argv: list[str]) -> str:
        raise NotImplementedError

    def _host_path(self, node: str, path: str) -> Path:
        raise NotImplementedError

    def _in_place_upgrade(self, target: str, **kwargs: Any) -> InPlaceUpgrade:
        raise NotImplementedError
