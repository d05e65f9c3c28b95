"""Prepare misbehaviours and injected prepare faults: a prepare that drops claims, refuses a
claim prepared before, hands out devices still held, or cannot share a shareable device; plus
the control channel's prepare delay and failure budgets."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, TypeVar

from fakedriver.claims import ClaimAllocation, ClaimError, ClaimKey
from fakedriver.misbehave.unprepare import UnprepareHooks

if TYPE_CHECKING:
    from fakedriver.controls import FaultState

log = logging.getLogger(__name__)

NAMES = frozenset(
    {
        "skip-claim-in-prepare",  # one claim is missing from the prepare response
        "first-claim-only",  # of several claims prepared together, only the first gets devices
        "prepare-not-idempotent",  # a prepare of a claim already prepared answers an error
        "prepare-held-devices",  # prepares a device still prepared for another claim
        "exclusive-shared-devices",  # a shareable device is prepared for one claim at a time
    }
)


class Outcome(Protocol):
    error: str


OutcomeT = TypeVar("OutcomeT", bound=Outcome)


class Shareable(Protocol):
    admin_access: bool
    share_id: str


class PrepareHooks:
    def __init__(
        self, faults: FaultState, unprepare: UnprepareHooks, sleep: Callable[[float], None]
    ) -> None:
        self._faults = faults
        self._unprepare = unprepare
        self._sleep = sleep

    def before_prepare(self) -> None:
        delay = self._faults.controls.prepare_delay_seconds
        if delay > 0:
            log.info("injected prepare delay of %.3fs", delay)
            self._sleep(delay)

    def refuse_prepared(self, ref: ClaimKey) -> str:
        """An error for a prepare of a claim prepared before, "" to answer it. A restarted
        kubelet asks again and must get the claim's devices (and its CDI spec back)."""
        if not self._faults.misbehaving("prepare-not-idempotent"):
            return ""
        log.warning("misbehaviour prepare-not-idempotent: refusing claim %s", ref.uid)
        return (
            f"claim {ref.namespace}/{ref.name} ({ref.uid}) is already prepared "
            "(misbehaviour prepare-not-idempotent)"
        )

    def waits_for_held_devices(self) -> bool:
        return not self._faults.misbehaving("prepare-held-devices")

    def shareable(self, device: Shareable) -> bool:
        """Whether several claims may hold `device` at once. exclusive-shared-devices: a driver
        that cannot share a device it publishes with allowMultipleAllocations (admin access is
        still let through)."""
        exclusive = self._faults.misbehaving("exclusive-shared-devices")
        return device.admin_access or (bool(device.share_id) and not exclusive)

    def refuse(self, allocation: ClaimAllocation) -> None:
        """Raise ClaimError for a prepare the faults make fail: a device kept busy by an
        unprepare misbehaviour, or an injected failure of the control channel."""
        self._unprepare.refuse_kept_busy(
            [(d.device, bool(d.admin_access or d.share_id)) for d in allocation.devices]
        )
        injected = self._faults.take_prepare_failure(d.device for d in allocation.devices)
        if injected:
            raise ClaimError(injected)

    def half_released(self, allocation: ClaimAllocation) -> dict[str, str]:
        names = [d.device for d in allocation.devices if not (d.admin_access or d.share_id)]
        return self._unprepare.half_released(allocation.namespace, allocation.name, names)

    def answer(
        self, claims: Sequence[ClaimKey], results: Mapping[str, OutcomeT]
    ) -> dict[str, OutcomeT]:
        """The prepare response as the misbehaviours give it."""
        answer = dict(results)
        if len(claims) > 1 and self._faults.misbehaving("first-claim-only"):
            for ref in claims[1:]:
                if not answer[ref.uid].error:
                    answer[ref.uid] = replace(answer[ref.uid], devices=())  # type: ignore[type-var]
            log.warning("misbehaviour first-claim-only: devices only for claim %s", claims[0].uid)
        if claims and self._faults.misbehaving("skip-claim-in-prepare"):
            skipped = claims[-1].uid
            answer.pop(skipped, None)
            log.warning("misbehaviour skip-claim-in-prepare: omitting claim %s", skipped)
        return answer
