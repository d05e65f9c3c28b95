"""Profile capability names (docs/CONTRACTS.md): shared by the profile and the catalog.

A capability is an optional driver *feature*: a requirement gated on one the profile does not
list is not applicable. Injecting faults is not a feature (conformance.faults): a requirement
needing a fault the profile cannot inject is not run.
"""

from __future__ import annotations

from collections.abc import Mapping

CAPABILITIES: frozenset[str] = frozenset(
    {
        "health-reporting",
        "device-status",
        "device-metadata",
        "device-taints",
        "extended-resource",
        "prioritized-list",
        "partitionable-devices",
        "admin-access",
        "opaque-config",
        "per-container-requests",
        "consumable-capacity",
        "binding-conditions",
        "misbehaviours",
    }
)

# Former capabilities that are fault abilities now -> the fault kind to configure instead.
FAULT_ABILITIES: Mapping[str, str] = {
    "withdraw-device": "withdraw",
    "fail-prepare": "fail-prepare",
    "delay-prepare": "delay-prepare",
}
