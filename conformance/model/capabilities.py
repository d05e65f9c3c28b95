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
        # A container sees only the devices of the claims its resources.claims names. A
        # pod-scoped device (a network interface in the pod's namespace, which every container
        # shares) cannot be kept from the pod's other containers.
        "per-container-claims",
        "consumable-capacity",
        "binding-conditions",
        "misbehaviours",
        # One claim used by several pods: a driver of exclusive devices may refuse it
        # (dra-driver-cpu pins a claim's CPUs to one container).
        "shared-claims",
    }
)

# Profile fields a requirement can be gated on, like a capability: a driver whose devices have
# no such thing leaves the field out, and the requirement is not applicable (also when its
# capability is probed: without the field the test has nothing to ask for). The profile's YAML
# name, as the catalog and the reasons say it -> the Profile attribute that holds it.
PROFILE_FIELDS: Mapping[str, str] = {
    "capacity": "capacity",
    "extendedResource": "extended_resource",
}

# Former capabilities that are fault abilities now -> the fault kind to configure instead.
FAULT_ABILITIES: Mapping[str, str] = {
    "withdraw-device": "withdraw",
    "fail-prepare": "fail-prepare",
    "delay-prepare": "delay-prepare",
}
