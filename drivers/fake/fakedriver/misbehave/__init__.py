"""The fake driver's misbehaviours, switched on at run time through the control channel
(fakedriver.controls): one module per area, each with its misbehaviours' NAMES and the hooks
the honest modules call. A hook returns the honest result while its misbehaviours are off.

Area modules import no honest module that imports fakedriver.controls at run time: the
controls read MISBEHAVIOURS from here."""

from __future__ import annotations

from fakedriver.misbehave import (
    cdi,
    health,
    prepare,
    registration,
    restart,
    slices,
    status,
    unprepare,
)

AREAS = (prepare, unprepare, cdi, slices, registration, restart, health, status)

MISBEHAVIOURS: frozenset[str] = frozenset().union(*(area.NAMES for area in AREAS))
