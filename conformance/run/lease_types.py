"""What the device lease talks about: a test's request, an entry in the book, the policy's
decision. Plain data shared by the policy, the book and the broker."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from conformance.errors import ConformanceError

ALL = "all"  # count meaning "every device of the kind"
WAITING, HELD = "waiting", "held"


class LeaseError(ConformanceError):
    """A lease can never be granted (unknown kind, more devices than the cluster has)."""


class Scope(StrEnum):
    EXCLUSIVE = "exclusive"  # nothing else is held beside it
    WHOLE = "whole"  # one node whole
    NODE = "node"  # devices on one node, the test's pods pinned there
    CLUSTER = "cluster"  # devices anywhere


@dataclass(frozen=True)
class DeviceNeed:
    kind: str
    count: int | str = 1  # an int >= 1, or ALL
    guard: bool = False  # no other lease may reach a device of the kind this one may get

    def __str__(self) -> str:
        return f"{self.kind}×{self.count}"


@dataclass(frozen=True)
class LeaseRequest:
    """What one test asks for.

    `nodes`: lease one of these nodes whole, in this order of preference. `pin`: lease the
    devices on one node, if one publishes enough of them; otherwise anywhere. `avoid_marked`:
    of `nodes`, never one with a "no kubelet restart" mark (the test restarts the kubelet).
    `expected_s`: how long the test held its lease in earlier runs (for backfilling)."""

    holder: str
    needs: tuple[DeviceNeed, ...] = ()
    exclusive: bool = False
    nodes: tuple[str, ...] | None = None
    pin: bool = False
    avoid_marked: bool = False
    expected_s: float | None = None

    def __post_init__(self) -> None:
        # Callers pass lists; the request is hashable and compares by value.
        object.__setattr__(self, "needs", tuple(self.needs))
        if self.nodes is not None:
            object.__setattr__(self, "nodes", tuple(self.nodes))


@dataclass
class BookEntry:
    """One request in the book, waiting or held."""

    holder: str
    needs: tuple[DeviceNeed, ...]
    scope: Scope
    candidates: tuple[str, ...] = ()  # the nodes it may get (whole or pinned)
    avoid_marked: bool = False
    expected_s: float | None = None
    node: str | None = None  # the node it holds (whole or pinned to)
    reserved: str | None = None  # the node a waiting whole or guarded lease keeps for itself
    state: str = WAITING
    since: float = 0.0  # when it asked, then when it was granted
    pid: int = 0  # the process that holds it, on `host`: for liveness and messages
    host: str = ""
    owner: str = ""  # who renews it, for a book whose holders renew (empty: a pid on `host`)

    @property
    def exclusive(self) -> bool:
        return self.scope is Scope.EXCLUSIVE


@dataclass(frozen=True)
class Decision:
    """The policy's answer for one waiting entry."""

    grant: bool
    node: str | None = None  # the node granted (whole or pinned), if any
    reserve: str | None = None  # not granted: the node to reserve meanwhile
