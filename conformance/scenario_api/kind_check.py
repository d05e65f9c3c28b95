"""Whether an allocated device is of a profile device kind (pure: unit tested without a cluster).

The kind's selector decides when the harness can evaluate it (conformance.model.cel); beyond
that, the kind's device set the run computed at its start does. When neither can tell, the
check is the harness's failure (HarnessError), never a pass.
"""

from __future__ import annotations

from collections.abc import Collection

from conformance.model.devices import PublishedDevice
from conformance.model.outcome import HarnessError
from conformance.scenario_api.device_requests import selector_verdict


def is_of_kind(
    kind: str,
    expression: str | None,
    device: PublishedDevice,
    driver: str,
    known: Collection[str] | None,
) -> bool:
    """True/False whether `device` is of `kind` (its selector `expression`; `known`: the ids
    of the kind's devices when the run started, None when unknown). HarnessError when the
    harness cannot tell."""
    verdict = selector_verdict(expression, device, driver)
    if verdict is not None:
        return verdict
    beyond = (
        f"its selector {expression!r} is beyond the harness's CEL evaluator (conjunctions of "
        "`==`/`!=` comparisons, conformance.model.cel)"
    )
    if known is None:
        raise HarnessError(
            f"cannot check which kind device {device.id} is ({kind!r}?): {beyond}, and the "
            "run could not compute the kind's devices at its start for the same reason"
        )
    if device.id not in known:
        raise HarnessError(
            f"cannot check which kind device {device.id} is ({kind!r}?): {beyond}, and the "
            "device was not published when the run computed the kind's devices at its start"
        )
    return True
