"""Restart and shutdown misbehaviours: a plugin that loses its checkpoint, unprepares
everything when it stops, or mishandles the slices it finds from before."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # not at run time: the honest modules import this package
    from fakedriver.controls import FaultState
    from fakedriver.publisher import SlicePublisher
    from fakedriver.slices import PoolPlan

log = logging.getLogger(__name__)

NAMES = frozenset(
    {
        "lose-checkpoint-on-restart",  # the checkpoint is discarded on start
        "unprepare-on-shutdown",  # stopping unprepares every prepared claim (specs, checkpoint)
        "no-republish-after-restart",  # a restart finding its slices never writes any again
        # a restart finding its slices writes the pool under new slice names at a higher
        # generation and deletes the old slices but one, left behind at the lower generation
        "stale-slice-after-restart",
    }
)


def loses_checkpoint(faults: FaultState) -> bool:
    if faults.misbehaving("lose-checkpoint-on-restart"):
        log.warning("misbehaviour lose-checkpoint-on-restart: the checkpoint is discarded")
        return True
    return False


def on_stop(faults: FaultState, unprepare_all: Callable[[], object]) -> None:
    """unprepare-on-shutdown: a plugin that cleans up after itself when it stops, as if it
    were uninstalled."""
    if faults.misbehaving("unprepare-on-shutdown"):
        log.warning("misbehaviour unprepare-on-shutdown: unpreparing every claim on shutdown")
        unprepare_all()


class RestartSlices:
    """What a plugin does with the slices of its node it finds at its first publish."""

    def __init__(self, faults: FaultState, publisher: SlicePublisher) -> None:
        self._faults = faults
        self._publisher = publisher
        self._found_leftovers: bool | None = None  # slices from before at the first publish
        self._start_slices: frozenset[str] | None = None  # their names, with the misbehaviour
        self._instance = secrets.token_hex(3)

    def keeps_leftovers(self, published: bool) -> bool:
        """no-republish-after-restart: a plugin that finds its node's slices from before at
        its first publish takes them as its own and, while the misbehaviour is on, never
        writes slices (a pool wiped after that stays empty). True: publish nothing."""
        on = self._faults.misbehaving("no-republish-after-restart")
        if self._found_leftovers is None:  # the first publish of this process
            self._found_leftovers = on and bool(self._publisher.existing())
        if not (on and self._found_leftovers):
            return False
        if not published:
            log.warning("misbehaviour no-republish-after-restart: the slices from before count")
        return True

    def named(self, plan: PoolPlan) -> PoolPlan:
        """stale-slice-after-restart: a plugin that found slices at its start (the
        misbehaviour on) names its own after its instance and leaves the first of the old ones
        alone, so that one stays at the old generation beside the pool it writes at a higher
        one. Switched on later, it starts with the next restart, as a new version would."""
        on = self._faults.misbehaving("stale-slice-after-restart")
        if self._start_slices is None:  # the first publish of this process
            found = self._publisher.existing() if on else []
            self._start_slices = frozenset(s["metadata"]["name"] for s in found)
        if not (on and self._start_slices):
            self._publisher.spared = frozenset()
            return plan
        self._publisher.spared = frozenset({min(self._start_slices)})
        return instance_named(plan, self._instance)


def instance_named(plan: PoolPlan, instance: str) -> PoolPlan:
    """Slice names that carry the plugin instance, as a driver naming its slices after its
    pod would (the predecessor's names are not its own)."""
    return replace(plan, slices=tuple(replace(s, name=f"{s.name}-{instance}") for s in plan.slices))
