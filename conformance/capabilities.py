"""Profile capability names (docs/CONTRACTS.md): shared by the profile and the catalog."""

from __future__ import annotations

CAPABILITIES: frozenset[str] = frozenset(
    {
        "health-reporting",
        "device-taints",
        "withdraw-device",
        "fail-prepare",
        "delay-prepare",
        "extended-resource",
        "prioritized-list",
        "partitionable-devices",
        "admin-access",
        "opaque-config",
        "per-container-requests",
        "consumable-capacity",
        "misbehaviours",
    }
)
