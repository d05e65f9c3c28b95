"""Health misbehaviours: a silent health stream, and devices that never recover."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # not at run time: the honest modules import this package
    from fakedriver.controls import FaultState

log = logging.getLogger(__name__)

NAMES = frozenset(
    {
        "no-health-reports",  # the health stream stays silent
        "sticky-unhealthy",  # a device once Unhealthy stays Unhealthy and tainted after recovery
    }
)


def silent(faults: FaultState) -> bool:
    """Whether a due health report is left unsent."""
    return faults.misbehaving("no-health-reports")


def sticky(misbehaviours: frozenset[str]) -> bool:
    """Whether a device once unhealthy stays so (and tainted) after it recovered."""
    return "sticky-unhealthy" in misbehaviours
