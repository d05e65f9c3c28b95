"""Claim status misbehaviours: prepared claims without status.devices, and binding conditions
never reported or reported only once per claim."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # not at run time: the honest modules import this package
    from fakedriver.controls import FaultState

log = logging.getLogger(__name__)

NAMES = frozenset(
    {
        "no-device-status",  # prepared claims never get status.devices (claims the capability)
        # devices with binding conditions are published, but their conditions never reported:
        # pods using one never bind
        "no-binding-status",
        # binding conditions reported once per claim UID: after the scheduler deallocates a
        # claim whose binding failed and allocates it again, the driver stays silent
        "binding-once-per-claim",
    }
)


def skips_device_status(faults: FaultState, claim_uid: str) -> bool:
    if faults.misbehaving("no-device-status"):
        log.warning("misbehaviour no-device-status: no status.devices for claim %s", claim_uid)
        return True
    return False


def once_per_claim(faults: FaultState) -> bool:
    """binding-once-per-claim: blind to a deallocation and reallocation of the same claim."""
    return faults.misbehaving("binding-once-per-claim")


def skips_binding(faults: FaultState, claim_uid: str) -> bool:
    if faults.misbehaving("no-binding-status"):
        log.warning("misbehaviour no-binding-status: claim %s is never attached", claim_uid)
        return True
    return False
