"""How a container proves which devices it received (the profile's `verification`).

`expected_identifiers` derives identifiers from a claim's allocation results (and the
published devices, for `attribute:` identifiers). `observed_identifiers` reads them from what
the workload printed. DRA-CORE-004 requires the two sets to be equal: the container must see
its devices, and only those.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from conformance.kube.state import AllocationResult, WorkloadOutput
from conformance.model.cel import resolve_name
from conformance.model.devices import PublishedDevice
from conformance.model.profile import Verification


class VerificationError(AssertionError):
    pass


def _split(value: str, separator: str | None) -> list[str]:
    parts = value.split(separator) if separator else value.split()
    return [p.strip() for p in parts if p.strip()]


def expected_identifiers(
    verification: Verification,
    results: Iterable[AllocationResult],
    devices: Mapping[str, PublishedDevice] | None = None,
) -> set[str]:
    """`devices` maps `<pool>/<device>` to the published device; needed for `attribute:`.
    Attribute names are compared fully qualified, an unqualified one in the result's driver
    domain, as the published devices' attributes are keyed (conformance.model.devices)."""
    out: set[str] = set()
    for result in results:
        if verification.value == "pool/device":
            out.add(result.device_id)
        elif verification.value == "device":
            out.add(result.device)
        else:
            attribute = resolve_name(verification.attribute or "", result.driver)
            device = (devices or {}).get(result.device_id)
            if device is None or attribute not in device.attributes:
                raise VerificationError(
                    f"allocated device {result.device_id} has no attribute {attribute} in the "
                    "published ResourceSlices, so the container cannot be checked for it"
                )
            out.add(str(device.attributes[attribute]))
    return out


def observed_identifiers(verification: Verification, output: WorkloadOutput) -> set[str]:
    if verification.method == "env":
        # Searched, not fully matched (docs/profile.md): anchor nameRegex with ^ and $.
        pattern = re.compile(verification.name_regex or "")
        out: set[str] = set()
        for name, value in output.env.items():
            if pattern.search(name):
                out.update(
                    _split(value, verification.separator)
                    if verification.separator
                    else [value.strip()]
                )
        return out
    text = output.file if verification.method == "file" else output.command
    if text is None:
        raise VerificationError(
            f"the workload printed no {verification.method} block; is the pod running the "
            "workload command built for this profile (Builders(..., verification=...))?"
        )
    return set(_split(text, verification.separator))
